"""The leader's loop: after every change in the cache (or when something time-based is due), one pass of
1. the job side (Workloads created, jobs released, stopped, finished: one ``JobSync`` per enabled kind of the
   registry that is suspended as a whole, ``PodGroupSync`` for pod groups),
2. the Workload side (deactivation, maximum execution time, draining queues, orphans: ``WorkloadSync``),
3. scheduling (``Admitter``: snapshot, ``core.schedule``, commit),
4. ClusterQueue and LocalQueue status (``QueueStatusWriter``);
5. deleted ClusterQueues and ResourceFlavors let go once unused (``QueueFinalizers``).

The loop is level-triggered: each pass looks at everything in the cache, so a restarted leader (or one that
missed a watch event) converges from whatever it finds. Writes are put into the cache as soon as the server
answers, so a pass never repeats the previous pass's writes while the watch catches up.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from webhook.api.configuration import WaitForPodsReady
from webhook.controller.admitter import Admitter
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.jobsync import JobSync
from webhook.controller.podsync import PodGroupSync
from webhook.controller.queuefinalizers import QueueFinalizers
from webhook.controller.queuestatus import QueueStatusWriter
from webhook.controller.telemetry import QueueMetrics
from webhook.controller.workloadsync import WorkloadSync
from webhook.core.admissionfairsharing import AdmissionFairSharing
from webhook.core.fairsharing import FairSharing
from webhook.core.namespace_policy import NamespacePolicy
from webhook.jobs import registry
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object
from webhook.logs import object_fields

log = logging.getLogger(__name__)
Clock = Callable[[], datetime.datetime]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        *,
        namespaces: NamespacePolicy | None = None,
        metrics: QueueMetrics | None = None,
        events: EventRecorder | None = None,
        clock: Clock = _utcnow,
        resync_seconds: float = 5.0,
        concurrency: int = 32,
        wait_for_pods_ready: WaitForPodsReady | None = None,
        manage_jobs_without_queue_name: bool = False,
        frameworks: Iterable[str] = ("batch/job", "pod"),
        fair_sharing: FairSharing | None = None,
        admission_fair_sharing: AdmissionFairSharing | None = None,
    ) -> None:
        self._cache = cache
        self._namespaces = namespaces or NamespacePolicy.default()
        self._clock = clock
        self._resync = resync_seconds
        self._gate = asyncio.Semaphore(concurrency)
        recorder = events or EventRecorder(kube)
        tracking = wait_for_pods_ready is not None and wait_for_pods_ready.enable
        enabled = frozenset(frameworks)
        self.job_kinds = [
            JobSync(
                kube,
                cache,
                events=recorder,
                adapter=adapter,
                frameworks=enabled,
                track_pods_ready=tracking,
                manage_without_queue_name=manage_jobs_without_queue_name,
            )
            for adapter in registry.suspendable(enabled)
        ]
        self.pods = (
            PodGroupSync(kube, cache, events=recorder, track_pods_ready=tracking)
            if any(a.managed_through_pods and not a.pod_owner for a in registry.enabled(enabled))
            else None
        )
        self.workloads = WorkloadSync(
            kube, cache, events=recorder, wait_for_pods_ready=wait_for_pods_ready, frameworks=enabled
        )
        self.admitter = Admitter(
            kube,
            cache,
            events=recorder,
            metrics=metrics,
            write_concurrency=concurrency,
            fair_sharing=fair_sharing,
            admission_fair_sharing=admission_fair_sharing,
        )
        self.queue_status = QueueStatusWriter(
            kube, cache, metrics=metrics, admission_fair_sharing=admission_fair_sharing
        )
        self.finalizers = QueueFinalizers(kube, cache)
        self.passes = 0
        self.errors = 0  # unexpected exceptions while reconciling one object (logged with their traceback)

    async def run(self) -> None:
        await self._cache.wait_synced()
        log.info("caches synced; reconciling")
        while True:
            seen = self._cache.generation
            wake = await self.pass_once()
            timeout = self._resync
            if wake is not None:
                timeout = min(timeout, max(0.05, (wake - self._clock()).total_seconds()))
            # asyncio.timeout, not wait_for: in Python 3.11 wait_for loses a cancellation that coincides with a
            # change, and the loop would go on after being told to stop (a lost Lease, a shutdown).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._cache.wait_changed(seen)

    async def pass_once(self) -> datetime.datetime | None:
        """One pass over everything; returns when the next time-based event is due (None if nothing is)."""
        now = self._clock()
        for kind in self.job_kinds:
            jobs = [j for j in self._cache.items(kind.resource) if self._managed(j)]
            await self._each(jobs, functools.partial(kind.sync, now=now))
        if self.pods is not None:
            pods = self.pods
            await self._each(pods.groups(), lambda group: pods.sync(group, now))
        wakes = await self._each(self._cache.workloads(), lambda wl: self.workloads.sync(wl, now))
        snapshot, result = await self.admitter.run_pass(now)
        await self.queue_status.write(snapshot, now, result)
        try:
            await self.finalizers.sync()
        except errors.KubeError as exc:
            log.warning("queue finalizers: %s", exc)
        self.passes += 1
        due = [w for w in wakes if isinstance(w, datetime.datetime)]
        return min(due) if due else None

    def _managed(self, job: Object) -> bool:
        namespace = (job.get("metadata") or {}).get("namespace", "")
        return self._namespaces.is_managed(namespace, self._cache.namespace_labels(namespace))

    async def _each(self, objects: Iterable[Any], work: Callable[[Any], Awaitable[Any]]) -> list[Any]:
        """``work`` on each object (or pod group) concurrently; one object's failure never stops the others."""

        async def one(item: Any) -> Any:
            obj: Object = item[0] if isinstance(item, list) else item
            async with self._gate:
                try:
                    return await work(item)
                except errors.Conflict:
                    return None  # someone wrote first; the next pass sees their version
                except errors.KubeError as exc:
                    log.warning("reconcile failed: %s", exc, extra=object_fields(obj))
                except Exception:
                    self.errors += 1
                    log.exception("reconcile crashed", extra=object_fields(obj))
                return None

        return list(await asyncio.gather(*(one(o) for o in objects)))
