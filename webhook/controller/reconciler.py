"""The leader's loop: after every change in the cache (or when something time-based is due), one pass of
1. the job side (Workloads created, jobs released, stopped, finished: one ``JobSync`` per enabled kind of the
   registry that is suspended as a whole, ``PodGroupSync`` for pod groups),
2. the Workload side (deactivation, maximum execution time, draining queues, orphans: ``WorkloadSync``),
3. scheduling (``Admitter``: snapshot, ``core.schedule``, commit),
4. ClusterQueue and LocalQueue status (``QueueStatusWriter``);
5. deleted ClusterQueues and ResourceFlavors let go once unused (``QueueFinalizers``).

The loop is level-triggered: a pass looks at everything in the cache, so a restarted leader (or one that
missed a watch event) converges from whatever it finds. Writes are put into the cache as soon as the server
answers, so a pass never repeats the previous pass's writes while the watch catches up.

Work proportional to change: a pass starts only when something a decision depends on changed (the cache's
``wakes``: pending reasons and queue status we wrote ourselves are quiet and start none), and step 2 looks only at
the Workloads that changed since the last pass, those whose job changed and those with a deadline due; every
``full_resync_seconds``, and whenever a queue, flavor, namespace or priority class changed, it looks at all of
them. Events, pending reasons and queue status are written in the background (``deferred``): a pass waits only
for the writes that admit, preempt or release.
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
from webhook.kube.objects import Object, ObjectKey, key_of
from webhook.kube.resources import POD, WORKLOAD, Resource
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
        full_resync_seconds: float = 30.0,
    ) -> None:
        self._cache = cache
        self._journal = cache.journal()
        self._full_resync = datetime.timedelta(seconds=full_resync_seconds)
        self._last_full: datetime.datetime | None = None
        self._workload_wakes: dict[ObjectKey, datetime.datetime] = {}
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
            PodGroupSync(kube, cache, events=recorder, track_pods_ready=tracking, frameworks=enabled)
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
            deferred=True,
        )
        self.queue_status = QueueStatusWriter(
            kube, cache, metrics=metrics, admission_fair_sharing=admission_fair_sharing, deferred=True
        )
        self.finalizers = QueueFinalizers(kube, cache)
        # Changes that concern single Workloads (their own, their job's, a pod's); any other kind's change (a
        # queue, a flavor, a namespace...) can concern every Workload, so it makes step 2 a full pass.
        owners = self.pods.owner_resources if self.pods is not None else ()
        self._per_object: frozenset[Resource] = frozenset(
            {WORKLOAD, POD, *(k.resource for k in self.job_kinds), *owners}
        )
        self.passes = 0
        self.errors = 0  # unexpected exceptions while reconciling one object (logged with their traceback)

    async def run(self) -> None:
        await self._cache.wait_synced()
        log.info("caches synced; reconciling")
        try:
            while True:
                seen = self._cache.wakes
                wake = await self.pass_once()
                timeout = self._resync
                if wake is not None:
                    timeout = min(timeout, max(0.05, (wake - self._clock()).total_seconds()))
                # asyncio.timeout, not wait_for: in Python 3.11 wait_for loses a cancellation that coincides with a
                # change, and the loop would go on after being told to stop (a lost Lease, a shutdown).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._cache.wait_woken(seen)
        finally:
            # What is written in the background goes with the loop: a stopped (or demoted) reconciler writes nothing.
            self.admitter.cancel()
            self.queue_status.cancel()

    async def pass_once(self) -> datetime.datetime | None:
        """One pass over everything; returns when the next time-based event is due (None if nothing is)."""
        now = self._clock()
        for kind in self.job_kinds:
            jobs = [j for j in self._cache.items(kind.resource) if self._managed(j)]
            await self._each(jobs, functools.partial(kind.sync, now=now))
        if self.pods is not None:
            pods = self.pods
            await self._each(pods.groups(), lambda group: pods.sync(group, now))
            await self._each(pods.scaled_to_zero(), pods.let_go)
        workloads = self._workloads_to_sync(now)
        wakes = await self._each(workloads, lambda wl: self.workloads.sync(wl, now))
        for obj, due in zip(workloads, wakes, strict=True):
            key = key_of(obj)
            if isinstance(due, datetime.datetime):
                self._workload_wakes[key] = due
            else:
                self._workload_wakes.pop(key, None)
        snapshot, result = await self.admitter.run_pass(now)
        await self.queue_status.write(snapshot, now, result)
        try:
            await self.finalizers.sync()
        except errors.KubeError as exc:
            log.warning("queue finalizers: %s", exc)
        self.passes += 1
        return min(self._workload_wakes.values(), default=None)

    def _workloads_to_sync(self, now: datetime.datetime) -> list[Object]:
        """Step 2's Workloads: all of them on a full pass, else those changed, with a changed job, or due."""
        changed = self._journal.take()
        full = (
            changed is None
            or self._last_full is None
            or now - self._last_full >= self._full_resync
            or any(resource not in self._per_object for resource in changed)
        )
        keys = set() if full or changed is None else set(changed.get(WORKLOAD, ()))
        for resource, objects in () if full or changed is None else changed.items():
            if resource in (WORKLOAD, POD):
                continue
            for job_key in objects:
                job = self._cache.get(resource, job_key)
                uid = ((job or {}).get("metadata") or {}).get("uid")
                if not uid:  # a deleted job: its Workloads (orphans now) are found only by looking at all
                    full = True
                    break
                keys.update(key_of(w) for w in self._cache.workloads_owned_by(uid))
        if full or changed is None:
            self._last_full = now
            return self._cache.workloads()
        keys.update(k for k, due in self._workload_wakes.items() if due <= now)
        found = (self._cache.get(WORKLOAD, k) for k in keys)
        return [obj for obj in found if obj is not None]

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
