"""The leader's loop: after every change in the cache (or when something time-based is due), one pass of
1. the job side (Workloads created, jobs released, stopped, finished: one ``JobSync`` per enabled kind of the
   registry that is suspended as a whole, ``PodGroupSync`` for pod groups),
2. the Workload side (deactivation, maximum execution time, draining queues, orphans: ``WorkloadSync``),
3. scheduling (``Admitter``: snapshot, ``core.schedule``, commit),
4. ClusterQueue and LocalQueue status (``QueueStatusWriter``);
5. deleted ClusterQueues and ResourceFlavors let go once unused (``QueueFinalizers``).

The loop is level-triggered at heart: a full pass looks at everything in the cache (the first one, then every
``full_resync_seconds``), so a restarted leader (or one that missed a watch event) converges from whatever it
finds. Writes are put into the cache as soon as the server answers, so a pass never repeats the previous pass's
writes while the watch catches up.

Work proportional to change, in between: a pass starts only when something a decision depends on changed (the
cache's ``wakes``: pending reasons and queue status we wrote ourselves are quiet and start none) or something
time-based is due. Steps 1 and 2 look only at the jobs, pod groups and Workloads the changes concern
(``ChangeRouter``; a change to a queue, flavor, namespace or priority class concerns all of them), those with a
deadline due and those whose retry is due: an object whose sync fails goes back to its ``WorkQueue`` with a
per-object backoff, so it neither spins the loop nor is retried by every pass. Step 3 schedules only when
something schedulable changed (``Admitter.needs_scheduling``: not on the echo of its own admissions), on a
snapshot whose Workload part is kept from pass to pass. Step 4 computes and writes queue status at most once per
``queue_status_interval``. Events, pending reasons and queue status are written in the background
(``deferred``): a pass waits only for the writes that admit, preempt or release.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from webhook.api.configuration import WaitForPodsReady
from webhook.api.views import ObjectView, Pod, WorkloadRecord
from webhook.controller.admitter import Admitter
from webhook.controller.cache import ClusterCache
from webhook.controller.changes import ChangeRouter
from webhook.controller.events import EventRecorder
from webhook.controller.finalizer import QueueFinalizers
from webhook.controller.jobsync import JobSync
from webhook.controller.podsync import PodGroupSync
from webhook.controller.queuestatus import QueueStatusWriter
from webhook.controller.ratelimit import TokenBucket, WriteLatency
from webhook.controller.telemetry import QueueMetrics
from webhook.controller.watches import resource_of
from webhook.controller.workloadsync import WorkloadSync
from webhook.controller.workqueue import WorkQueue
from webhook.core.admissionfairsharing import AdmissionFairSharing
from webhook.core.fairsharing import FairSharing
from webhook.core.namespace_policy import NamespacePolicy
from webhook.jobs import pod_group, registry
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import ObjectKey
from webhook.kube.resources import WORKLOAD
from webhook.logs import object_fields

log = logging.getLogger(__name__)
Clock = Callable[[], datetime.datetime]
# How long a Workload waits in the front of its queue before its first pending reason is written (the admitter's
# ``pending_settle``): in a queue that moves, most are admitted sooner and never need one.
PENDING_SETTLE = datetime.timedelta(seconds=2)
# At most this many pending reasons written a second on average, in bursts of PENDING_BURST (the heads of the queues
# first): in a storm they were a fifth of the controller's Workload writes and slowed the admissions for all.
PENDING_RATE, PENDING_BURST = 5.0, 50
# Each queue's status is written at most every QUEUE_STATUS_INTERVAL seconds, and all of them at QUEUE_STATUS_RATE a
# second on average: 60 queues moving with every admission are then written every 12 s instead of every 3 s.
QUEUE_STATUS_INTERVAL, QUEUE_STATUS_RATE = 3.0, 5.0


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
        queue_status_interval: float = QUEUE_STATUS_INTERVAL,
        schedule_spacing: float = 0.02,
        pending_settle: datetime.timedelta = PENDING_SETTLE,
    ) -> None:
        self._cache = cache
        self._metrics = metrics
        self._full_resync = datetime.timedelta(seconds=full_resync_seconds)
        self._last_full: datetime.datetime | None = None
        self._workload_wakes: dict[ObjectKey, datetime.datetime] = {}
        self._namespaces = namespaces or NamespacePolicy.default()
        self._clock = clock
        self._resync = resync_seconds
        self._concurrency = concurrency
        recorder = events or EventRecorder(kube)
        # Information yields to admissions: while the API server is slow to answer the admission writes, events,
        # pending reasons and queue status are written at a fraction of their rates (WriteLatency).
        self.write_latency = WriteLatency()
        recorder.limit_by(self.write_latency.share)
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
            min_spacing=schedule_spacing,
            pending_settle=pending_settle,
            pending_limit=TokenBucket(PENDING_RATE, PENDING_BURST, share=self.write_latency.share),
            latency=self.write_latency,
        )
        self.queue_status = QueueStatusWriter(
            kube,
            cache,
            metrics=metrics,
            admission_fair_sharing=admission_fair_sharing,
            deferred=True,
            min_interval=queue_status_interval,
            max_rate=QUEUE_STATUS_RATE,
            share=self.write_latency.share,
        )
        self.finalizers = QueueFinalizers(kube, cache)
        # Which jobs, pod groups and Workloads each change concerns (any other kind's change, a queue, a flavor, a
        # namespace..., can concern all of them, and makes the next pass a full one).
        self._router = ChangeRouter(
            cache,
            job_kinds={resource_of(a): a.kind for a in registry.suspendable(enabled)},
            frameworks=enabled,
            pod_groups=self.pods is not None,
            group_owners=self.pods.group_owners if self.pods is not None else {},
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
            log.info("reconciler stops after %d passes, %d of which scheduled", self.passes, self.admitter.schedules)
            # What is written in the background goes with the loop: a stopped (or demoted) reconciler writes nothing.
            self.admitter.cancel()
            self.queue_status.cancel()

    async def pass_once(self) -> datetime.datetime | None:
        """One pass over what changed (everything on a full pass); returns when the next time-based event is due
        (a deadline, a failed object's retry; None if nothing is)."""
        started = time.perf_counter()
        now = self._clock()
        if self._last_full is None or now - self._last_full >= self._full_resync:
            self._last_full = now
            self._router.add_all()
            self.admitter.invalidate()
        for kind in self.job_kinds:
            work = self._router.jobs[kind.resource]
            everything, keys = work.take(now)
            view = kind.view
            found = (
                self._cache.views(kind.resource, view)
                if everything
                else (self._cache.viewed(kind.resource, key, view) for key in keys)
            )
            jobs = [j for j in found if j is not None and self._managed(j)]
            await self._each(jobs, functools.partial(kind.sync, now=now), queue=work, now=now)
        if self.pods is not None:
            await self._sync_groups(self.pods, now)
            await self._each(self.pods.scaled_to_zero(), self.pods.let_go)
        workloads = self._workloads_to_sync(now)
        wakes = await self._each(
            workloads, lambda wl: self.workloads.sync(wl, now), queue=self._router.workloads, now=now
        )
        for workload, due in zip(workloads, wakes, strict=True):
            key = workload.key
            if isinstance(due, datetime.datetime):
                self._workload_wakes[key] = due
            else:
                self._workload_wakes.pop(key, None)
        snapshot, result = await self.admitter.run_pass(now)
        await self.queue_status.write(snapshot, now, result, finished=self.admitter.finished())
        try:
            await self.finalizers.sync()
        except errors.KubeError as exc:
            log.warning("queue finalizers: %s", exc)
        self.passes += 1
        if self._metrics is not None:
            self._metrics.reconciler_pass(time.perf_counter() - started)
            self._metrics.set_information_share(self.write_latency.share())
        due = (*self._workload_wakes.values(), self._router.next_retry(), self.admitter.due(), self.queue_status.due())
        return min((t for t in due if t is not None), default=None)

    async def _sync_groups(self, pods: PodGroupSync, now: datetime.datetime) -> None:
        """Pod groups: those whose pods or Workload changed; all of them on a full pass. A group with pods still
        leaving their nodes is looked at again next pass (the quota goes back once they have stopped)."""
        work = self._router.groups
        everything, keys = work.take(now)
        groups = pods.groups() if everything else [g for k in sorted(keys) if (g := self._router.group_pods(k))]
        await self._each(groups, lambda group: pods.sync(group, now), queue=work, now=now)
        for group in groups:
            if any(pod_group.is_leaving(p) for p in group):
                work.add(_group_key(group))

    def _workloads_to_sync(self, now: datetime.datetime) -> list[WorkloadRecord]:
        """Step 2's Workloads: all of them on a full pass, else those changed, with a changed job, or due."""
        everything, keys = self._router.workloads.take(now)
        if everything:
            return self._cache.workloads()
        keys.update(k for k, due in self._workload_wakes.items() if due <= now)
        found = (self._cache.viewed(WORKLOAD, k, WorkloadRecord) for k in keys)
        return [workload for workload in found if workload is not None]

    def _managed(self, job: ObjectView) -> bool:
        namespace = job.metadata.get("namespace", "")
        return self._namespaces.is_managed(namespace, self._cache.namespace_labels(namespace))

    async def _each(
        self,
        objects: Iterable[Any],
        work: Callable[[Any], Awaitable[Any]],
        *,
        queue: WorkQueue[ObjectKey] | None = None,
        now: datetime.datetime | None = None,
    ) -> list[Any]:
        """``work`` on each object (or pod group), ``concurrency`` at a time, in their order; one object's failure
        never stops the others. With ``queue``, a failure (a conflict too: the version we read is stale) sends the
        object back to it, to be retried after its backoff or as soon as it changes; a success resets its backoff.

        A fixed number of workers take the objects in turn: a full pass over 50,000 Workloads used to start one
        task per object at once (most finish without an await): 47 MiB held at once and 2.5-3.3 s of the loop for
        50,000 trivial ones, against 2 MiB and 10-50 ms with 32 workers (measured on this project's 2-core machine)."""

        async def one(item: Any) -> Any:
            obj: ObjectView = item[0] if isinstance(item, list) else item
            key = _group_key(item) if isinstance(item, list) else obj.key
            try:
                done = await work(item)
            except errors.Conflict:
                failed.append(key)  # someone wrote first; their version is on its way
            except errors.KubeError as exc:
                failed.append(key)
                log.warning("reconcile failed: %s", exc, extra=object_fields(obj.raw))
            except Exception:
                failed.append(key)
                self.errors += 1
                log.exception("reconcile crashed", extra=object_fields(obj.raw))
            else:
                succeeded.append(key)
                return done
            return None

        todo = list(objects)
        if not todo:
            return []
        results: list[Any] = [None] * len(todo)
        turns = iter(enumerate(todo))

        async def worker() -> None:
            for index, item in turns:
                results[index] = await one(item)

        failed: list[ObjectKey] = []
        succeeded: list[ObjectKey] = []
        await asyncio.gather(*(worker() for _ in range(min(self._concurrency, len(todo)))))
        if queue is not None:
            queue.succeeded(succeeded)
            for key in failed:
                queue.failed(key, now or self._clock())
        return results


def _group_key(group: list[Pod]) -> ObjectKey:
    """A pod group's key in the router: its namespace and the name of its Workload."""
    first = group[0]
    return ObjectKey(first.metadata.get("namespace", ""), pod_group.workload_name([first]))
