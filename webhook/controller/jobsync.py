"""Keeping one job and its Workload in step: the generic job reconciler, for every kind suspended as a whole.

The kind is an adapter (``webhook.jobs.adapter.SuspendableAdapter``: batch Job, JobSet, ...); one ``JobSync``
per enabled kind. For a job in a managed namespace (below, "Job" is any such kind), in order:
0. a Job naming a prebuilt Workload (``kueue.x-k8s.io/prebuilt-workload-name``) uses that one, as Kueue does: it
   waits until it exists, leaves it alone when another object controls it, makes it its own (owner reference),
   and finishes it ``OutOfSync`` when it does not describe the Job; no Workload is created for it;
   an unlabelled Job that should have been queued (it was created while Turnstile's webhook was down, in a
   namespace with a ``default`` LocalQueue, or with ``manageJobsWithoutQueueName``) is labelled and suspended;
1. its Workload exists, owned by it (a stale one left by an earlier Job of the same name is deleted); a Workload
   being deleted (by a user, or discarded in step 5) keeps its quota through the ``resource-in-use`` finalizer
   until the Job is stopped and restored, and only then lets go, so a new one is queued;
2. a suspended Job whose template or queue changed gets its pending Workload updated, and a changed priority
   class label updates the Workload's priority (as Kueue does);
3. a finished Job finishes its Workload (the quota goes back, the finalizer goes);
4. a stopped Job gets its template restored once the API server allows it (its pods are gone);
5. an admitted Workload releases its suspended Job with the flavors injected, if the Job still fits the
   admission (pod count, per-pod requests after LimitRange defaults and RuntimeClass overhead); a Job that no
   longer fits (Kueue's "no matching Workload") is stopped and its Workload discarded (step 1 then requeues);
6. an evicted or unadmitted Workload stops its running Job: suspend, clear ``startTime`` (restored in step 4);
7. once the Job is stopped and restored, an evicted Workload gives its quota back and is requeued.
Every write carries the resourceVersion read, and its result goes straight into the cache so the next pass
does not repeat it. A job whose controller owner is itself an enabled kind (a JobSet's Jobs) is left to that
owner. Steps 3-7 are the state machine all kinds share, taken by ``webhook.controller.statemachine`` (pod groups'
too); this module is the mechanism of kinds suspended as a whole (``_Suspended``: what each step does to the job)
and steps 0-2; what each step means for the kind is the adapter's. The job and its Workload are read through their
views (``ClusterCache.view``: made once per stored version; a Workload as ``WorkloadRecord``, since its writes copy
it whole), never as dicts; the dicts go only to the client and the event recorder.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Mapping

from webhook.api.constants import DEFAULT_LOCAL_QUEUE, RESOURCE_IN_USE_FINALIZER, WORKLOAD_PRIORITY_CLASS_SOURCE
from webhook.api.views import ObjectView, WorkloadRecord, entries, section
from webhook.api.workload import priority_class_ref_wire
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.finalizer import release_in_use
from webhook.controller.statemachine import StateMachine
from webhook.controller.watches import resource_of
from webhook.jobs import batch_job, registry, suspendable
from webhook.jobs import workload as wl_life
from webhook.jobs.adapter import Finish, SuspendableAdapter
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo
from webhook.jobs.priority import Priority
from webhook.jobs.steps import JobState
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object, ObjectKey
from webhook.kube.resources import WORKLOAD
from webhook.logs import object_fields

log = logging.getLogger(__name__)


class JobSync:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        *,
        events: EventRecorder,
        adapter: SuspendableAdapter = batch_job.ADAPTER,
        frameworks: frozenset[str] = registry.DEFAULT_FRAMEWORKS,
        track_pods_ready: bool = False,
        manage_without_queue_name: bool = False,
    ) -> None:
        self._adapter = adapter
        self.resource = resource_of(adapter)
        self.view = adapter.view  # what ``sync`` takes a job as: the cache's view of it (``ClusterCache.view``)
        self._frameworks = frameworks | {adapter.framework}
        self._kube = kube
        self._cache = cache
        self._events = events
        self._machine = StateMachine(kube, cache, events=events, track_pods_ready=track_pods_ready)
        self._manage_without_queue_name = manage_without_queue_name
        # admission_mismatch per (job, workload, defaults) version: every pass checks every admitted job, and
        # the answer changes only when one of the three does.
        self._mismatch: dict[tuple[object, ...], str | None] = {}

    async def sync(self, job: ObjectView, now: datetime.datetime) -> None:
        """One job, as the cache's view of it (a ``view``)."""
        if job.metadata.get("deletionTimestamp"):
            # Deleted in the foreground, the Job waits for its Workload, which must not wait for the Job.
            deleting = self._cache.workload(job.namespace, self._workload_name(job))
            if deleting is not None and deleting.metadata.get("deletionTimestamp"):
                await self._drop_finalizer(deleting)
            return
        if self._owned_by_managed_parent(job):
            return  # its owner's Workload covers it
        finish = self._adapter.finished(job)
        # 0. Slipped past the webhook unlabelled.
        if suspendable.queue_name(job) is None:
            if not finish.done:
                await self._adopt(job, now)
            return
        defaults = self._cache.pod_defaults(job.namespace)
        prebuilt = suspendable.prebuilt_workload_name(job) is not None
        workload = await self._own_workload(job, defaults, prebuilt=prebuilt, done=finish.done, now=now)
        if workload is None:
            return
        # 2. A pending Workload follows its suspended Job; the priority follows the priority class label.
        if (
            self._adapter.is_suspended(job)
            and not workload.holds_quota
            and not workload.finished
            and not prebuilt  # a prebuilt one is the user's: in sync or finished
        ):
            workload = await self._refresh_pending(job, workload, defaults)
        if not workload.finished:
            workload = await self._refresh_priority(job, workload)
        await self._take_step(job, workload, defaults, finish, now)

    async def _own_workload(
        self, job: ObjectView, defaults: PodDefaults, *, prebuilt: bool, done: bool, now: datetime.datetime
    ) -> WorkloadRecord | None:
        """1. The one Workload this Job goes on with, owned by it; None when there is nothing more to do now (it was
        just created, or is being deleted and holds its quota until the Job has stopped). ``prebuilt``: the job
        names a Workload of the user's."""
        workload = self._cache.workload(job.namespace, self._workload_name(job))
        if prebuilt:
            workload = await self._prebuilt(job, workload, defaults, now)
            if workload is None:
                return None
        if workload is not None and not self._owned_by(workload, job):
            await self._delete_stale(workload)
            workload = None
        if workload is not None and workload.metadata.get("deletionTimestamp"):
            await self._let_go(job, workload, done=done, now=now)
            return None
        if workload is None:
            if not done and not prebuilt:
                await self._create_workload(job, defaults)
            return None
        return workload

    async def _take_step(
        self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults, finish: Finish, now: datetime.datetime
    ) -> None:
        """3-7: the shared state machine; what each step does to the job is ``_Suspended``'s."""
        await self._machine.take_step(workload, _Suspended(self, job, finish, defaults), now)

    # -- steps ----------------------------------------------------------------------------------------------

    def _workload_name(self, job: ObjectView) -> str:
        return suspendable.job_workload_name(job, self._adapter.kind)

    async def _prebuilt(
        self, job: ObjectView, workload: WorkloadRecord | None, defaults: PodDefaults, now: datetime.datetime
    ) -> WorkloadRecord | None:
        """Step 0 for a prebuilt Workload: the Workload to go on with, or None when there is nothing to do now."""
        if workload is None or workload.metadata.get("deletionTimestamp"):
            return None  # not created yet (the Job stays suspended until it is)
        owner = wl_life.controlling_owner(workload)
        if owner is not None and owner["metadata"].get("uid") != job.metadata.get("uid"):
            return None  # another object's Workload: Kueue leaves it alone too
        if owner is None:
            workload = await self._replace_workload(suspendable.adopted_prebuilt(workload, job, self._adapter.kind))
        if (
            not workload.finished
            and not workload.holds_quota
            and not suspendable.prebuilt_in_sync(self._adapter.pod_sets(job, defaults), workload)
        ):
            message = "The prebuilt workload is out of sync with its user job"
            body = wl_life.finished(workload, succeeded=False, message=message, now=now)
            body["status"]["conditions"] = [
                c | {"reason": "OutOfSync"} if c.get("type") == "Finished" else c for c in body["status"]["conditions"]
            ]
            await self._machine.write_status(body)
            await self._events.record(job, type="Warning", reason="OutOfSync", message=message, now=now)
            return None
        return workload

    def _owned_by_managed_parent(self, job: ObjectView) -> bool:
        """Its controller is an object of a managed kind that exists, so that object's Workload covers it.

        The reference alone is not trusted: whoever creates the Job writes it, and one naming a JobSet that does
        not exist (or a uid not the JobSet's) would let the Job run outside any quota. Kinds managed through
        their pods are not watched here, so they never vouch for a Job.
        """
        for owner in job.owner_references:
            if owner.get("controller"):
                group = str(owner.get("apiVersion", "")).rpartition("/")[0]
                adapter = registry.by_kind(group, str(owner.get("kind", "")), self._frameworks)
                if adapter is None or adapter.managed_through_pods:
                    return False
                key = ObjectKey(job.namespace, str(owner.get("name", "")))
                parent = self._cache.viewed(resource_of(adapter), key, ObjectView)
                return parent is not None and parent.metadata.get("uid") == owner.get("uid")
        return False

    def _admission_mismatch(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> str | None:
        key = (
            job.metadata.get("uid"),
            job.metadata.get("resourceVersion"),
            workload.metadata.get("uid"),
            workload.metadata.get("resourceVersion"),
            defaults.fingerprint(),
        )
        if key not in self._mismatch:
            if len(self._mismatch) > 20_000:
                self._mismatch.clear()
            self._mismatch[key] = self._adapter.admission_mismatch(job, workload, defaults)
        return self._mismatch[key]

    @staticmethod
    def _owned_by(workload: WorkloadRecord, job: ObjectView) -> bool:
        uid = job.metadata.get("uid")
        return any(o.get("uid") == uid for o in workload.owner_references)

    async def _delete_stale(self, workload: WorkloadRecord) -> None:
        with contextlib.suppress(errors.NotFound, errors.Conflict):
            # Its job is gone (another of the same name exists): nothing of it runs that the quota would cover.
            if await release_in_use(self._kube, self._cache, WORKLOAD, workload):
                return
            await self._kube.delete(
                WORKLOAD, workload.name, namespace=workload.namespace, uid=workload.metadata.get("uid")
            )
        log.info("deleted a Workload left by an earlier job of the same name", extra=object_fields(workload.raw))

    async def _adopt(self, job: ObjectView, now: datetime.datetime) -> None:
        """Step 0: what the mutating webhook would have done to an unlabelled Job, had it been up.

        Only a Job created while the namespace already had its ``default`` LocalQueue (or with
        ``manageJobsWithoutQueueName``), not owned by another managed object, and never stamped by the webhook.
        """
        if suspendable.owned_by_controller(job) or suspendable.is_stamped(job):
            return
        queue = None
        default = self._cache.local_queue(job.namespace, DEFAULT_LOCAL_QUEUE)
        if default is not None and str(job.metadata.get("creationTimestamp", "")) >= str(
            default.metadata.get("creationTimestamp", "")
        ):
            queue = DEFAULT_LOCAL_QUEUE
        elif self._manage_without_queue_name:
            queue = ""
        if queue is None:
            return
        adopted = suspendable.adopted(job, queue=queue or None, workload_name=self._workload_name(job))
        result = await self._kube.replace(self.resource, adopted)
        self._cache.observe(self.resource, result)
        why = "it was created without passing Turnstile's webhook"
        await self._events.record(
            job,
            type="Normal",
            reason="Stopped",
            message=f"{self._adapter.kind.kind} suspended and queued: {why}",
            now=now,
        )
        log.info("suspended and queued a job that slipped past the webhook", extra=object_fields(job.raw))

    async def _let_go(self, job: ObjectView, workload: WorkloadRecord, *, done: bool, now: datetime.datetime) -> None:
        """Step 1 for a Workload being deleted: stop the Job first, release the finalizer once it has stopped."""
        if done or not workload.holds_quota:
            await self._drop_finalizer(workload)
            return
        if not self._adapter.is_suspended(job):
            await self._stop(job, workload, "its Workload is being deleted", now)
            return
        if self._adapter.is_stopping(job):
            if self._adapter.template_mutable(job):
                await self._restore(job, workload)
            return
        if self._adapter.has_active_pods(job):
            return  # the Job controller is still removing its pods; the quota stays held until they are gone
        await self._drop_finalizer(workload)

    async def _discard(self, job: ObjectView, workload: WorkloadRecord, why: str, now: datetime.datetime) -> None:
        """Step 5 on a mismatch: the Workload goes (its finalizer keeps the quota until the Job has stopped)."""
        finalizers = entries(workload.metadata, "finalizers")
        if RESOURCE_IN_USE_FINALIZER not in finalizers:
            held = dict(workload.raw) | {
                "metadata": dict(workload.metadata) | {"finalizers": [*finalizers, RESOURCE_IN_USE_FINALIZER]}
            }
            workload = await self._replace_workload(held)
        deleted = await self._kube.delete(
            WORKLOAD, workload.name, namespace=workload.namespace, uid=workload.metadata.get("uid")
        )
        if deleted and ObjectView.of(deleted).metadata.get("deletionTimestamp"):
            self._cache.observe(WORKLOAD, deleted)
        await self._events.record(
            job, type="Normal", reason="Stopped", message=f"No matching Workload: {why}; queued again", now=now
        )
        log.info("discarded a Workload that no longer matches its job: %s", why, extra=object_fields(job.raw))
        if not self._adapter.is_suspended(job):
            await self._stop(job, workload, f"No matching Workload: {why}", now)

    async def _drop_finalizer(self, workload: WorkloadRecord) -> None:
        await release_in_use(self._kube, self._cache, WORKLOAD, workload)

    async def _replace_workload(self, body: Object) -> WorkloadRecord:
        result = await self._kube.replace(WORKLOAD, body)
        self._cache.observe(WORKLOAD, result)
        return WorkloadRecord.of(result)

    async def _refresh_priority(self, job: ObjectView, workload: WorkloadRecord) -> WorkloadRecord:
        """A changed ``kueue.x-k8s.io/priority-class`` label changes the Workload's priority (Kueue's behaviour)."""
        priority = self._priority(job)
        if priority.source != WORKLOAD_PRIORITY_CLASS_SOURCE or not priority.class_name:
            return workload
        spec = workload.spec
        ref = priority_class_ref_wire(WORKLOAD_PRIORITY_CLASS_SOURCE, priority.class_name)
        current = spec.get("priorityClassRef")
        if current == ref and spec.get("priority") == priority.value:
            return workload
        if current is not None and current.get("group") != ref["group"]:
            return workload  # the kind of class is fixed while quota is reserved; a new Workload would be needed
        updated = dict(workload.raw) | {"spec": dict(spec) | {"priority": priority.value, "priorityClassRef": ref}}
        result = await self._replace_workload(updated)
        await self._events.record(
            job,
            type="Normal",
            reason="UpdatedWorkload",
            message=f"Priority follows WorkloadPriorityClass {priority.class_name}: {priority.value}",
        )
        return result

    def _priority(self, job: ObjectView) -> Priority:
        return self._machine.priority(job, template=self._adapter.priority_template(job))

    async def _create_workload(self, job: ObjectView, defaults: PodDefaults) -> None:
        priority = self._priority(job)
        body = suspendable.workload_for(
            job,
            kind=self._adapter.kind,
            pod_sets=self._adapter.pod_sets(job, defaults),
            priority=priority.value,
            priority_class_name=priority.class_name,
            priority_class_source=priority.source,
        )
        await self._machine.create_workload(body, subjects=(job,))

    async def _refresh_pending(
        self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults
    ) -> WorkloadRecord:
        spec = workload.spec
        expected_queue = suspendable.queue_name(job)
        if self._adapter.matches_workload(job, workload, defaults) and spec.get("queueName") == expected_queue:
            return workload
        updated = dict(workload.raw)
        pod_sets = self._adapter.pod_sets(job, defaults)
        updated["spec"] = dict(spec) | {"podSets": pod_sets, "queueName": expected_queue}
        result = await self._replace_workload(updated)
        await self._events.record(job, type="Normal", reason="UpdatedWorkload", message="Workload follows the job")
        return result

    async def _start(self, job: ObjectView, workload: WorkloadRecord, infos: Mapping[str, PodSetInfo]) -> None:
        """5. Unsuspended with the flavors (``PodSetMergeError`` when they conflict with the template)."""
        admission = section(workload.status, "admission")
        counts = {str(a.name): int(a.raw["count"]) for a in workload.assignments if a.raw.get("count") is not None}
        running = self._adapter.released(job, infos, counts)
        result = await self._kube.replace(self.resource, running)
        self._cache.observe(self.resource, result)
        cq = admission.get("clusterQueue", "")
        await self._events.record(job, type="Normal", reason="Started", message=f"Admitted by ClusterQueue {cq}")

    async def _stop(self, job: ObjectView, workload: WorkloadRecord, why: str, now: datetime.datetime) -> None:
        # The API server lets a suspended Job's scheduling directives change only once it has no active pods and
        # either never started or is marked Suspended by the Job controller: suspend (marked as stopping) and
        # clear status.startTime now; the template is restored by a later pass (step 4), when that holds.
        stopped = await self._kube.replace(self.resource, self._adapter.suspended(job))
        self._cache.observe(self.resource, stopped)
        if self._adapter.view.of(stopped).status.get("startTime"):
            stopped = await self._kube.patch_status(
                self.resource, job.name, {"status": {"startTime": None}}, namespace=job.namespace
            )
            self._cache.observe(self.resource, stopped)
        kind = self._adapter.kind.kind
        await self._events.record(job, type="Normal", reason="Stopped", message=f"{kind} stopped: {why}", now=now)
        written = self._adapter.view.of(stopped)
        if self._adapter.template_mutable(written):
            await self._restore(written, workload)

    async def _restore(self, job: ObjectView, workload: WorkloadRecord) -> None:
        restored = await self._kube.replace(self.resource, self._adapter.restored(job, workload))
        self._cache.observe(self.resource, restored)


class _Suspended:
    """The mechanism of kinds suspended as a whole, for one job: what each step of the state machine does to it."""

    def __init__(self, sync: JobSync, job: ObjectView, end: Finish, defaults: PodDefaults) -> None:
        self._sync = sync
        self._job = job
        self._end = end
        self._defaults = defaults
        adapter = sync._adapter
        suspended = adapter.is_suspended(job)
        self.state = JobState(
            done=end.done,
            waiting=suspended,
            running=not suspended,
            active_pods=adapter.has_active_pods(job),
            stopping=adapter.is_stopping(job),
        )
        self.subjects = (job,)

    def ended(self) -> Finish:
        return self._end

    async def let_go(self, workload: WorkloadRecord) -> None:
        await self._sync._drop_finalizer(workload)

    async def restore(self, workload: WorkloadRecord) -> None:
        # (once the Job controller has removed its pods)
        if self._sync._adapter.template_mutable(self._job):
            await self._sync._restore(self._job, workload)

    async def fits(self, workload: WorkloadRecord, now: datetime.datetime) -> bool:
        """A Job that no longer fits what was admitted (pod count, per-pod requests) has its admission discarded."""
        mismatch = self._sync._admission_mismatch(self._job, workload, self._defaults)
        if mismatch is not None:
            await self._sync._discard(self._job, workload, mismatch, now)
        return mismatch is None

    async def release(self, workload: WorkloadRecord, infos: Mapping[str, PodSetInfo], now: datetime.datetime) -> None:
        await self._sync._start(self._job, workload, infos)

    def pods_ready(self, workload: WorkloadRecord) -> bool:
        return self._sync._adapter.pods_ready(self._job)

    async def stop(self, workload: WorkloadRecord, now: datetime.datetime) -> None:
        why = "evicted: " + _evict_reason(workload) if workload.evicted else "not admitted by a ClusterQueue"
        await self._sync._stop(self._job, workload, why, now)


def _evict_reason(workload: WorkloadRecord) -> str:
    for c in workload.conditions:
        if c.get("type") == "Evicted":
            return str(c.get("message") or c.get("reason") or "")
    return ""
