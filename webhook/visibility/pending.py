"""``PendingIndex``: the queues as the scheduler orders them, recomputed from the watch-fed cache when it changes.

Owns: turning the cache into a ``Snapshot`` (``core.snapshotparse``), asking ``core.schedule`` (the very pass the
leader runs, so a position here is the position the scheduler gives), and keeping the answer until the cache
changes. The pass runs in a worker thread on copies of the cache's lists, so a deep queue does not hold up the
admission webhooks served by the same event loop; at most one pass runs at a time, and a cache that changes all
the time is recomputed at most every ``min_interval`` seconds (answers are then that much behind).
Must not: serve HTTP or check permissions.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

from webhook.api.views import ObjectView
from webhook.controller.cache import ClusterCache
from webhook.core.scheduler import schedule
from webhook.core.snapshotparse import SnapshotParser
from webhook.kube.objects import Object, key_of
from webhook.kube.resources import CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, RESOURCE_FLAVOR, WORKLOAD
from webhook.visibility.summary import PendingQueues


class _Inputs(TypedDict):
    """What a pass reads: the cache's lists, as the snapshot parser takes them."""

    cluster_queues: list[Object]
    flavors: list[Object]
    local_queues: list[Object]
    workloads: list[Object]
    namespaces: list[Object]


@dataclass(frozen=True)
class Queues:
    pending: PendingQueues
    cluster_queues: frozenset[str]
    local_queues: dict[tuple[str, str], str]  # (namespace, name) -> ClusterQueue
    generation: int
    seconds: float  # how long the pass took


class PendingIndex:
    def __init__(self, cache: ClusterCache, *, min_interval: float = 0.5) -> None:
        self._cache = cache
        self._parser = SnapshotParser()
        self._min_interval = min_interval
        self._lock = asyncio.Lock()
        self._current: Queues | None = None
        self._computed_at = 0.0

    async def queues(self) -> Queues:
        await self._cache.wait_synced()  # an empty answer before the first list would be a wrong one
        async with self._lock:
            current = self._current
            fresh = current is not None and current.generation == self._cache.generation
            recent = time.monotonic() - self._computed_at < self._min_interval
            if current is None or not (fresh or recent):
                current = self._current = await self._compute()
                self._computed_at = time.monotonic()
            return current

    async def _compute(self) -> Queues:
        cache = self._cache
        generation = cache.generation
        # Lists of references to the stored objects, taken on the loop: the worker never iterates a dict the loop
        # may change, and decodes them itself (into the scheduler's types, as the snapshot parser does).
        inputs: _Inputs = {
            "cluster_queues": list(cache.items(CLUSTER_QUEUE)),
            "flavors": list(cache.items(RESOURCE_FLAVOR)),
            "local_queues": list(cache.items(LOCAL_QUEUE)),
            "workloads": list(cache.items(WORKLOAD)),
            "namespaces": self._namespaces(),
        }
        return await asyncio.to_thread(self._pass, inputs, generation)

    def _namespaces(self) -> list[Object]:
        try:
            return list(self._cache.items(NAMESPACE))
        except KeyError:  # a cache without namespaces (the dashboard of a user who may not list them)
            return []

    def _pass(self, inputs: _Inputs, generation: int) -> Queues:
        started = time.perf_counter()
        snapshot = self._parser.snapshot(**inputs)
        result = schedule(snapshot, now=datetime.now(UTC))
        local_queues = [ObjectView.of(o) for o in inputs["local_queues"]]
        return Queues(
            pending=PendingQueues(result, {key_of(o): o for o in inputs["workloads"]}),
            cluster_queues=frozenset(key_of(o).name for o in inputs["cluster_queues"]),
            local_queues={lq.key: str(lq.spec.get("clusterQueue", "")) for lq in local_queues},
            generation=generation,
            seconds=time.perf_counter() - started,
        )
