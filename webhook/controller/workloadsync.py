"""The Workload side of the reconciler: evictions that are not preemption, orphans, bare Workloads.

For each Workload, in order:
1. an orphan (its owning Job is gone) is deleted, which frees its quota; its ``resource-in-use`` finalizer goes
   too (while the Job exists, ``JobSync`` decides when the finalizer may go);
2. an admitted Workload is evicted when it is deactivated (``spec.active: false``), when it ran past
   ``maximumExecutionTimeSeconds`` (and is then deactivated, as in Kueue), or when its ClusterQueue or
   LocalQueue is stopped with ``HoldAndDrain``;
3. an evicted bare Workload (no Job to stop) gives its quota back at once.
Returns the next moment something time-based is due, so the loop can sleep until then.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Mapping
from typing import Any

from webhook.api import conditions
from webhook.api.configuration import WaitForPodsReady
from webhook.api.constants import COND_PODS_READY, COND_REQUEUED, RESOURCE_IN_USE_FINALIZER
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.finalizer import release_in_use
from webhook.jobs import workload as wl_life
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object, key_of
from webhook.kube.resources import JOB, WORKLOAD
from webhook.logs import object_fields

log = logging.getLogger(__name__)

MAX_EXEC_REASON = "DeactivatedDueToMaximumExecutionTimeExceeded"


def _job_owner(workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for owner in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") == "Job" and owner.get("controller"):
            return owner  # type: ignore[no-any-return]
    return None


class WorkloadSync:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        *,
        events: EventRecorder,
        wait_for_pods_ready: WaitForPodsReady | None = None,
    ) -> None:
        self._kube = kube
        self._cache = cache
        self._events = events
        self._pods_ready = wait_for_pods_ready if wait_for_pods_ready and wait_for_pods_ready.enable else None

    async def sync(self, workload: Object, now: datetime.datetime) -> datetime.datetime | None:
        meta = workload.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        owner = _job_owner(workload)
        if meta.get("deletionTimestamp") or wl_life.is_finished(workload):
            if (
                RESOURCE_IN_USE_FINALIZER in (meta.get("finalizers") or [])
                and owner is not None
                and self._cache.job(namespace, owner.get("name", "")) is None
                and await self._owner_gone(namespace, owner)
            ):
                await self._drop_finalizer(workload)
            return None

        # 1. Orphans. The job cache holds only labelled Jobs, so ask the server before deleting.
        orphan_candidate = owner is not None and self._cache.job(namespace, owner.get("name", "")) is None
        if orphan_candidate and owner is not None and await self._owner_gone(namespace, owner):
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self._drop_finalizer(workload)
                await self._kube.delete(WORKLOAD, name, namespace=namespace, uid=meta.get("uid"))
                self._cache.forget(WORKLOAD, key_of(workload))
            return None

        spec = workload.get("spec") or {}
        # 2. Evictions other than preemption.
        if wl_life.holds_quota(workload) and not wl_life.is_evicted(workload):
            if spec.get("active", True) is False:
                await self._evict(workload, "Deactivated", "The workload is deactivated", now)
                return None
            deadline = self._deadline(workload)
            if deadline is not None and deadline <= now:
                workload = await self._deactivate(workload)
                await self._evict(workload, MAX_EXEC_REASON, "Exceeded the maximum execution time", now)
                return None
            drain = self._draining_queue(workload)
            if drain is not None:
                await self._evict(workload, drain[0], drain[1], now)
                return None
            ready_by = self._ready_deadline(workload)
            if ready_by is not None and ready_by <= now:
                await self._pods_ready_timeout(workload, now)
                return None
            due = [d for d in (deadline, ready_by) if d is not None]
            return min(due) if due else None

        # 3. A bare Workload has no job to stop: release its quota now (pod groups release theirs in PodGroupSync).
        owned_by_pods = any(o.get("kind") == "Pod" for o in meta.get("ownerReferences") or [])
        bare = owner is None and not owned_by_pods
        if bare and wl_life.is_evicted(workload) and wl_life.holds_quota(workload):
            await self._write_status(wl_life.released(workload, now=now))
        # A reactivated Workload is requeued.
        requeued = conditions.find((workload.get("status") or {}).get("conditions"), COND_REQUEUED)
        if (
            spec.get("active", True)
            and requeued is not None
            and requeued.get("status") == "False"
            and str(requeued.get("reason", "")).startswith("Deactivated")
            and not wl_life.holds_quota(workload)
        ):
            status = dict(workload.get("status") or {})
            status["conditions"] = conditions.set_condition(
                status.get("conditions"),
                kind=COND_REQUEUED,
                status=True,
                reason="Reactivated",
                message="The workload was reactivated",
                now=now,
            )
            await self._write_status(dict(workload) | {"status": status})
        return None

    # -- helpers --------------------------------------------------------------------------------------------

    def _ready_deadline(self, workload: Mapping[str, Any]) -> datetime.datetime | None:
        """When an admitted Workload's pods must be ready by (waitForPodsReady), or None."""
        if self._pods_ready is None or conditions.is_true(workload, COND_PODS_READY):
            return None
        since = wl_life.admitted_since(workload)
        return None if since is None else since + datetime.timedelta(seconds=self._pods_ready.timeout_seconds)

    async def _pods_ready_timeout(self, workload: Object, now: datetime.datetime) -> None:
        assert self._pods_ready is not None
        strategy = self._pods_ready.requeuing
        count = wl_life.requeue_count(workload)
        if strategy.backoff_limit_count is not None and count + 1 > strategy.backoff_limit_count:
            workload = await self._deactivate(workload)
            await self._evict(workload, "DeactivatedDueToRequeuingLimitExceeded", "Requeuing limit exceeded", now)
            return
        wait = wl_life.backoff_seconds(count, base=strategy.backoff_base_seconds, cap=strategy.backoff_max_seconds)
        message = f"Pods not ready within {self._pods_ready.timeout_seconds:g}s; requeued in {wait:g}s"
        body = wl_life.timed_out(workload, message=message, requeue_at=now + datetime.timedelta(seconds=wait), now=now)
        await self._write_status(body)
        await self._events.record(workload, type="Normal", reason="Evicted", message=message, now=now)

    async def _owner_gone(self, namespace: str, owner: Mapping[str, Any]) -> bool:
        try:
            job = await self._kube.get(JOB, owner.get("name", ""), namespace=namespace)
        except errors.NotFound:
            return True
        return bool((job.get("metadata") or {}).get("uid") != owner.get("uid"))

    @staticmethod
    def _deadline(workload: Mapping[str, Any]) -> datetime.datetime | None:
        seconds = (workload.get("spec") or {}).get("maximumExecutionTimeSeconds")
        since = wl_life.admitted_since(workload)
        if seconds is None or since is None:
            return None
        past = int((workload.get("status") or {}).get("accumulatedPastExecutionTimeSeconds") or 0)
        return since + datetime.timedelta(seconds=int(seconds) - past)

    def _draining_queue(self, workload: Mapping[str, Any]) -> tuple[str, str] | None:
        status = workload.get("status") or {}
        cq_name = (status.get("admission") or {}).get("clusterQueue", "")
        cq = self._cache.cluster_queue(cq_name)
        if cq is not None and (cq.get("spec") or {}).get("stopPolicy") == "HoldAndDrain":
            return "ClusterQueueStopped", f"The ClusterQueue {cq_name} is stopped"
        meta = workload.get("metadata") or {}
        lq_name = (workload.get("spec") or {}).get("queueName", "")
        lq = self._cache.local_queue(meta.get("namespace", ""), lq_name)
        if lq is not None and (lq.get("spec") or {}).get("stopPolicy") == "HoldAndDrain":
            return "LocalQueueStopped", f"The LocalQueue {lq_name} is stopped"
        return None

    async def _deactivate(self, workload: Object) -> Object:
        meta = workload["metadata"]
        result = await self._kube.patch(
            WORKLOAD, meta["name"], {"spec": {"active": False}}, namespace=meta["namespace"]
        )
        self._cache.observe(WORKLOAD, result)
        return result

    async def _evict(self, workload: Object, reason: str, message: str, now: datetime.datetime) -> None:
        await self._write_status(wl_life.evicted(workload, reason=reason, message=message, now=now))
        await self._events.record(workload, type="Normal", reason="Evicted", message=f"{reason}: {message}", now=now)
        log.info("evicted %s", reason, extra=object_fields(workload))

    async def _drop_finalizer(self, workload: Object) -> None:
        await release_in_use(self._kube, self._cache, WORKLOAD, workload)

    async def _write_status(self, workload: Object) -> None:
        result = await self._kube.replace_status(WORKLOAD, workload)
        self._cache.observe(WORKLOAD, result)
