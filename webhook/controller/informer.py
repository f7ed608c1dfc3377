"""One resource kind kept in step with the API server: list, then watch, forever.

Owns: ``WatchSpec`` (what to watch) and ``Informer`` (resourceVersion tracking, bookmarks, re-list on
``Gone``, reconnect with capped jittered backoff, the ``synced`` flag). It hands every list and change to an
``InformerSink`` (the cache) through synchronous calls, so the sink updates its state atomically.
Must not: interpret objects; it only moves them (listed without ``managedFields``, which the cache never keeps,
and as the sink's compact copies when it is given ``each``).

Errors: any ``KubeError`` is retried (a CRD not yet installed or RBAC not yet granted heals later, as in
client-go's reflector) and logged; anything else is a bug and ends ``run()``, which the supervisor reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from webhook.controller.backoff import Backoff
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object, resource_version_of
from webhook.kube.resources import Resource

log = logging.getLogger(__name__)

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True)
class WatchSpec:
    """A kind and the server-side filter of the objects wanted (all namespaces unless ``namespace``)."""

    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        selector = f" [{self.label_selector}]" if self.label_selector else ""
        return f"{self.resource}{where}{selector}"


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a list is decoded and stored, back on after (if it was on).

    A list builds every object at once (50,000 Workloads: about a million tracked dicts and lists); as the heap
    grows the collector keeps walking all of it, 26 full collections, half of the list's 13 s (``bench.cache``).
    Decoded JSON makes no cycles, so reference counting frees all of the list's garbage; what the rest of the process
    makes in cycles meanwhile (a caught exception's traceback) waits seconds for the next collection. Lists running
    together: the first to end turns it back on, which costs the others time, never memory.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class InformerSink(Protocol):
    def replace(self, resource: Resource, objects: list[Object]) -> None:
        """Everything that exists now (after a list); anything else known for ``resource`` is gone."""
        ...

    def apply(self, resource: Resource, change: ChangeType, obj: Object) -> None:
        """One change seen on the watch."""
        ...


class Informer:
    def __init__(
        self,
        kube: Kube,
        spec: WatchSpec,
        sink: InformerSink,
        *,
        backoff: Backoff | None = None,
        watch_timeout: tuple[int, int] = (300, 600),
        rng: random.Random | None = None,
        each: Callable[[Object], Object] | None = None,
    ) -> None:
        """``each``: what the sink will keep of a listed object (``ClusterCache.stored_form``), taken as each page
        of the list arrives, so the list's pages are not all held at once."""
        self.spec = spec
        self._each = each
        self._kube = kube
        self._sink = sink
        self._backoff = backoff or Backoff()
        # Like client-go, vary each watch's server-side timeout so many watches don't reconnect together.
        self._watch_timeout = watch_timeout
        self._rng = rng or random.Random()
        self._synced = asyncio.Event()
        self.resource_version = ""
        # Counters for tests, logs and metrics.
        self.lists = 0
        self.watches = 0
        self.events = 0
        self.failures = 0

    @property
    def synced(self) -> bool:
        """True once the first list has reached the sink; stays true across re-lists."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                if not self.resource_version:
                    await self._list()
                seen = await self._watch()
            except errors.Gone as e:
                # The version we hold was compacted away: only a fresh list can tell what changed. Back off
                # anyway (the delay is short after a healthy stream) so a list that keeps expiring can't spin.
                self.resource_version = ""
                await self._pause(e)
                continue
            except errors.KubeError as e:
                await self._pause(e)
                continue
            if seen == 0:
                # A watch that ended without a single event (not even a bookmark) is suspicious: slow down.
                await asyncio.sleep(self._backoff.next())

    async def _pause(self, error: errors.KubeError) -> None:
        self.failures += 1
        delay = self._backoff.next()
        if isinstance(error, errors.Gone):
            level, action = logging.INFO, "listing again"
        elif isinstance(error, errors.Retryable):
            level, action = logging.WARNING, "retrying"
        else:
            level, action = logging.ERROR, "retrying"
        log.log(level, "%s: %s; %s in %.1fs", self.spec, error.message, action, delay)
        await asyncio.sleep(delay)

    async def _list(self) -> None:
        spec = self.spec
        with _collector_paused():
            listed = await self._kube.list(
                spec.resource,
                namespace=spec.namespace,
                label_selector=spec.label_selector,
                field_selector=spec.field_selector,
                without_managed_fields=True,
                each=self._each,
            )
            self._sink.replace(spec.resource, listed.items)
        self.resource_version = listed.resource_version
        self.lists += 1
        self.watches = 0
        self._backoff.reset()
        if not self._synced.is_set():
            log.info("%s: synced with %d objects", spec, len(listed.items))
            self._synced.set()

    async def _watch(self) -> int:
        """Follow one watch stream to its end; returns how many events it carried."""
        spec = self.spec
        seen = 0
        self.watches += 1
        stream = self._kube.watch(
            spec.resource,
            resource_version=self.resource_version,
            namespace=spec.namespace,
            label_selector=spec.label_selector,
            field_selector=spec.field_selector,
            timeout_seconds=self._rng.randint(*self._watch_timeout),
            allow_bookmarks=True,
        )
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                seen += 1
                self.events += 1
                if event.type != "BOOKMARK":
                    self._sink.apply(spec.resource, event.type, event.object)
                version = resource_version_of(event.object)
                if version:
                    self.resource_version = version
                self._backoff.reset()
        return seen
