"""The Workload side of the reconciler: evictions that are not preemption, orphans, bare Workloads.

For each Workload, in order:
1. an orphan (its owning job, of an enabled kind suspended as a whole, is gone) is deleted, which frees its
   quota; its ``resource-in-use`` finalizer goes too (while the job exists, ``JobSync`` decides when the
   finalizer may go);
2. an admitted Workload is evicted when it is deactivated (``spec.active: false``), when it ran past
   ``maximumExecutionTimeSeconds`` (and is then deactivated, as in Kueue), or when its ClusterQueue or
   LocalQueue is stopped with ``HoldAndDrain``;
3. an evicted bare Workload (no Job to stop) gives its quota back at once.
Returns the next moment something time-based is due, so the loop can sleep until then.
The Workload comes as the cache's view (``WorkloadRecord``, made once per stored version); its decisions read the
typed Workload (``ClusterCache.typed_workload``, decoded once per version), its writes copy the record whole.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Iterable

from webhook.api import model
from webhook.api.configuration import WaitForPodsReady
from webhook.api.constants import RESOURCE_IN_USE_FINALIZER
from webhook.api.views import ObjectView, WorkloadRecord
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.finalizer import release_in_use
from webhook.controller.watches import resource_of
from webhook.core import evictions
from webhook.jobs import registry
from webhook.jobs import workload as wl_life
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object, ObjectKey
from webhook.kube.resources import WORKLOAD, Resource
from webhook.logs import object_fields

log = logging.getLogger(__name__)


class WorkloadSync:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        *,
        events: EventRecorder,
        wait_for_pods_ready: WaitForPodsReady | None = None,
        frameworks: Iterable[str] = ("batch/job", "pod"),
    ) -> None:
        enabled = frozenset(frameworks)
        # The enabled kinds an owner reference may name, by (group, kind): those suspended as a whole (a job whose
        # Workload is an orphan once it is gone), with their resource, and those managed through their pods.
        self._job_kinds = {(a.kind.group, a.kind.kind): resource_of(a) for a in registry.suspendable(enabled)}
        self._pod_kinds = {(a.kind.group, a.kind.kind) for a in registry.enabled(enabled) if a.managed_through_pods}
        self._kube = kube
        self._cache = cache
        self._events = events
        self._pods_ready = wait_for_pods_ready if wait_for_pods_ready and wait_for_pods_ready.enable else None

    async def sync(self, workload: WorkloadRecord, now: datetime.datetime) -> datetime.datetime | None:
        typed = self._cache.typed_workload(workload)
        meta = typed.metadata
        owner, owner_resource = self._job_owner(typed)
        owner_cached = owner is None or owner_resource is None or self._cached(meta.namespace, owner, owner_resource)
        if meta.deletion_timestamp or typed.status.finished:
            if (
                RESOURCE_IN_USE_FINALIZER in meta.finalizers
                and not owner_cached
                and await self._owner_gone(meta.namespace, owner, owner_resource)
            ):
                await self._drop_finalizer(workload)
            return None

        # 1. Orphans. The job cache holds only labelled Jobs, so ask the server before deleting.
        if not owner_cached and await self._owner_gone(meta.namespace, owner, owner_resource):
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self._drop_finalizer(workload)
                await self._kube.delete(WORKLOAD, meta.name, namespace=meta.namespace, uid=meta.uid or None)
                self._cache.forget(WORKLOAD, ObjectKey(meta.namespace, meta.name))
            return None

        # 2. Evictions other than preemption, as the core decides them.
        if typed.status.holds_quota and not typed.status.evicted:
            check = evictions.decide_eviction(
                typed,
                now=now,
                pods_ready=self._pods_ready,
                cluster_queue_stop_policy=self._stop_policy(self._admitted_queue(typed)),
                local_queue_stop_policy=self._stop_policy(
                    self._cache.local_queue(meta.namespace, typed.spec.queue_name)
                ),
            )
            if check.eviction is not None:
                await self._apply(workload, check.eviction, now)
            return check.due

        # 3. A bare Workload has no job to stop: release its quota now (pod groups release theirs in PodGroupSync).
        owned_by_pods = any((o.group, o.kind) in self._pod_kinds for o in meta.owner_references)
        bare = owner is None and not owned_by_pods
        if bare and typed.status.evicted and typed.status.holds_quota:
            await self._write_status(wl_life.released(workload, now=now))
        # A reactivated Workload is requeued.
        if evictions.reactivated(typed):
            await self._write_status(wl_life.reactivated(workload, now=now))
        return None

    async def _apply(self, workload: WorkloadRecord, eviction: evictions.Eviction, now: datetime.datetime) -> None:
        if eviction.deactivate:
            workload = await self._deactivate(workload)
        if eviction.requeue_at is not None:  # a pods-ready timeout, requeued with backoff
            body = wl_life.timed_out(workload, message=eviction.message, requeue_at=eviction.requeue_at, now=now)
            await self._write_status(body)
            await self._events.record(workload, type="Normal", reason="Evicted", message=eviction.message, now=now)
            return
        await self._evict(workload, eviction.reason, eviction.message, now)

    # -- helpers --------------------------------------------------------------------------------------------

    def _job_owner(self, workload: model.Workload) -> tuple[model.OwnerReference | None, Resource | None]:
        """The controller owner of an enabled kind suspended as a whole, and its resource; (None, None) else."""
        for owner in workload.metadata.owner_references:
            if owner.controller and (resource := self._job_kinds.get((owner.group, owner.kind))) is not None:
                return owner, resource
        return None, None

    def _cached(self, namespace: str, owner: model.OwnerReference, resource: Resource) -> bool:
        return self._cache.get(resource, ObjectKey(namespace, owner.name)) is not None

    async def _owner_gone(self, namespace: str, owner: model.OwnerReference | None, resource: Resource | None) -> bool:
        if owner is None or resource is None:
            return False
        try:
            job = await self._kube.get(resource, owner.name, namespace=namespace)
        except errors.NotFound:
            return True
        return ObjectView.of(job).metadata.get("uid") != owner.uid

    def _admitted_queue(self, workload: model.Workload) -> ObjectView | None:
        admission = workload.status.admission
        return self._cache.cluster_queue(admission.cluster_queue if admission is not None else "")

    @staticmethod
    def _stop_policy(queue: ObjectView | None) -> str | None:
        return None if queue is None else queue.spec.get("stopPolicy")

    async def _deactivate(self, workload: WorkloadRecord) -> WorkloadRecord:
        result = await self._kube.patch(
            WORKLOAD, workload.name, {"spec": {"active": False}}, namespace=workload.namespace
        )
        self._cache.observe(WORKLOAD, result)
        return WorkloadRecord.of(result)

    async def _evict(self, workload: WorkloadRecord, reason: str, message: str, now: datetime.datetime) -> None:
        await self._write_status(wl_life.evicted(workload, reason=reason, message=message, now=now))
        await self._events.record(workload, type="Normal", reason="Evicted", message=f"{reason}: {message}", now=now)
        log.info("evicted %s", reason, extra=object_fields(workload.raw))

    async def _drop_finalizer(self, workload: WorkloadRecord) -> None:
        await release_in_use(self._kube, self._cache, WORKLOAD, workload)

    async def _write_status(self, workload: Object) -> None:
        result = await self._kube.replace_status(WORKLOAD, workload)
        self._cache.observe(WORKLOAD, result)
