"""Keeping plain pods and pod groups in step with their Workload (the pod side of the reconciler).

For each group of managed pods (a single pod is a group of one), in order:
1. once every pod of the group exists (its first one, under fast admission), its Workload is created (owned by
   all the pods; pods that come later are added as owners);
2. all pods ended → the Workload finishes (quota released);
3. admitted → gated pods, up to each PodSet's count, lose the admission gate and gain the flavors' node selector
   and tolerations;
4. running without admission (evicted, say) → the group's pods that still run are deleted (pods cannot be
   suspended; a StatefulSet makes them again, gated, and its Workload is kept for them), then an evicted
   Workload's quota is released, once none of its deleted pods still runs on its node (as Kueue waits).
A group whose pods' controller is a kind that sizes its group (a StatefulSet: ``registry.group_owners``) takes its
size and queue from the live object, not from what its template stamped on the pods (``kubectl scale`` goes
through /scale, which no webhook sees): the queue label goes down to its pods (Kueue's ``syncQueueLabel``), a pending
Workload follows the size and the queue, and an admitted one of another size is evicted (``Resized``) and queued
again at the new size, since an admitted Workload's pod sets are fixed; scaled to zero with no pod left, a
Workload the owner kept (step 4) is deleted.
Steps 2-4 are the state machine every kind shares, taken by ``webhook.controller.statemachine`` (as ``JobSync``'s
steps 3-7): here is only what each step does to pods (``_Gated``, the gate-per-pod mechanism) and step 1.
Decisions are ``webhook.jobs.pod_group``'s; this module sequences and writes. Pods, their owner and the Workload
are read through their views (``ClusterCache.view``, made once per stored version).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from webhook.api.constants import QUEUE_NAME_LABEL
from webhook.api.views import ObjectView, Pod, WorkloadRecord, section
from webhook.api.workload import priority_class_ref_wire
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.statemachine import StateMachine
from webhook.controller.watches import resource_of
from webhook.jobs import pod_group, registry
from webhook.jobs import workload as wl_life
from webhook.jobs.adapter import Finish, PodOwnerAdapter
from webhook.jobs.podset import PodSetInfo
from webhook.jobs.steps import JobState, Step, next_step
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import ObjectKey
from webhook.kube.resources import POD, WORKLOAD, Resource
from webhook.logs import object_fields

log = logging.getLogger(__name__)


def _idle(leaving: bool) -> JobState:
    """A group all of whose pods were deleted: nothing waits or runs, but some may still stop on their nodes."""
    return JobState(done=False, waiting=False, running=False, active_pods=leaving)


class _Owner:
    """The live object a group's pods belong to, when its kind sizes the group (a StatefulSet)."""

    def __init__(self, adapter: PodOwnerAdapter, obj: ObjectView) -> None:
        self.adapter = adapter
        self.obj = obj
        self.size = adapter.group_size(obj)
        self.queue = str(obj.labels.get(QUEUE_NAME_LABEL, ""))


class PodGroupSync:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        *,
        events: EventRecorder,
        track_pods_ready: bool = False,
        frameworks: Iterable[str] = (pod_group.ADAPTER.framework,),
    ) -> None:
        self._kube = kube
        self._cache = cache
        self._events = events
        self._machine = StateMachine(kube, cache, events=events, track_pods_ready=track_pods_ready)
        self._owners: dict[tuple[str, str], tuple[PodOwnerAdapter, Resource]] = {
            (a.kind.group, a.kind.kind): (a, resource_of(a)) for a in registry.group_owners(frameworks)
        }

    @property
    def group_owners(self) -> dict[Resource, PodOwnerAdapter]:
        """The kinds whose live objects size their pods' groups (watched, read only), by resource."""
        return {resource: adapter for adapter, resource in self._owners.values()}

    def scaled_to_zero(self) -> list[ObjectView]:
        """The owners scaled to zero whose group has no pod left but whose Workload they keep (step 4's keeper)."""
        found: list[ObjectView] = []
        for adapter, resource in self._owners.values():
            for owner in self._cache.views(resource, adapter.view):
                namespace = owner.namespace
                group = adapter.pod_group(owner, namespace)
                if not group or adapter.group_size(owner) != 0 or self._cache.pod_group(namespace, group):
                    continue
                workload = self._cache.workload(namespace, group)
                uid = owner.metadata.get("uid")
                if workload is not None and any(o.get("uid") == uid for o in workload.owner_references):
                    found.append(owner)
        return found

    async def let_go(self, owner: ObjectView) -> None:
        """Scaled to zero before its pods came back: nothing of the group runs or waits, so the Workload it kept goes
        (it would otherwise be admitted and hold quota for pods that will not come)."""
        for workload in self._cache.workloads_owned_by(str(owner.metadata.get("uid") or "")):
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self._kube.delete(
                    WORKLOAD, workload.name, namespace=workload.namespace, uid=workload.metadata.get("uid")
                )
            self._cache.forget(WORKLOAD, ObjectKey(workload.namespace, workload.name))
            log.info("deleted the Workload of a pod group scaled to zero", extra=object_fields(workload.raw))

    def _owner(self, pods: Sequence[Pod]) -> _Owner | None:
        """The live object sizing this group: the controller all its pods share, if its kind sizes groups and it
        names this group (a reference alone is not trusted: the object must exist with that uid)."""
        ref = pod_group.controller_of(pods)
        if ref is None:
            return None
        entry = self._owners.get((str(ref.get("apiVersion", "")).rpartition("/")[0], str(ref.get("kind", ""))))
        if entry is None:
            return None
        adapter, resource = entry
        namespace = pods[0].namespace
        owner = self._cache.viewed(resource, ObjectKey(namespace, str(ref.get("name", ""))), adapter.view)
        if owner is None:
            return None
        if owner.metadata.get("uid") != ref.get("uid") or adapter.pod_group(owner, namespace) != pod_group.group_of(
            pods[0]
        ):
            return None
        return _Owner(adapter, owner)

    def groups(self) -> list[list[Pod]]:
        by_workload: dict[tuple[str, str], list[Pod]] = {}
        for pod in self._cache.pods():
            by_workload.setdefault((pod.namespace, pod_group.workload_name([pod])), []).append(pod)
        return list(by_workload.values())

    async def sync(self, group: Sequence[Pod], now: datetime.datetime) -> None:
        """One group's pods, as the cache's views."""
        workload = self._cache.workload(group[0].namespace, pod_group.workload_name(group))
        # Deleted pods are no longer the group's, but one still running holds its node: the quota stays.
        pods = [p for p in group if not pod_group.is_leaving(p)]
        leaving = any(pod_group.still_running(p, now) for p in group)
        if not pods:
            if workload is not None and next_step(workload, _idle(leaving)) is Step.GIVE_BACK:
                await self._machine.write_status(wl_life.released(workload, now=now))
            return
        done, _ = pod_group.finished(pods)
        owner = self._owner(pods)
        if owner is not None and await self._sync_queue_label(pods, owner):
            return  # the next pass sees the pods with their owner's queue

        # 1. The Workload, once the group is complete.
        if workload is None:
            if not done and pod_group.ready_for_workload(pods) and (owner is None or owner.size > 0):
                await self._create(pods, size=None if owner is None else owner.size)
            return
        if workload.finished:
            return  # (the shared state machine would say CLOSED: a pod group has no finalizer to drop)
        if newcomers := pod_group.unowned(pods, workload):
            workload = await self._adopt(workload, pods, newcomers)
        if owner is not None:
            workload = await self._follow(workload, owner, now)

        # 2-4: the state machine every kind shares; gating is how pods are suspended.
        await self._machine.take_step(workload, _Gated(self, pods, leaving=leaving), now)
        if owner is not None and (latest := self._cache.workload(workload.namespace, workload.name)):
            # Its quota just went back (evicted as resized, say): the new size now, before the scheduler's turn
            # in this same pass could admit it again at the old one.
            await self._follow(latest, owner, now)

    async def _stop(
        self,
        workload: WorkloadRecord,
        pods: Sequence[Pod],
        running: Sequence[Pod],
        *,
        leaving: bool,
        now: datetime.datetime,
    ) -> None:
        """4. Running without admission (evicted, say): the pods go (pods cannot be suspended), then the quota."""
        workload = await self._keep(workload, pods, running)
        for pod in running:
            with contextlib.suppress(errors.NotFound):
                last = await self._kube.delete(POD, pod.name, namespace=pod.namespace, uid=pod.metadata.get("uid"))
                leaving = leaving or (last is not None and pod_group.still_running(Pod.of(last), now))
        why = "evicted" if workload.evicted else "not admitted by a ClusterQueue"
        for pod in running:
            await self._events.record(pod, type="Normal", reason="Stopped", message=f"Pod stopped: {why}", now=now)
        # Gone at once (never on a node): the quota now; still stopping on their nodes: once they are gone.
        if workload.evicted and workload.holds_quota and not leaving:
            await self._machine.write_status(wl_life.released(workload, now=now))

    async def _sync_queue_label(self, pods: Sequence[Pod], owner: _Owner) -> bool:
        """The owner's queue goes down to its pods (its webhook changes it only while the group waits, and its
        template's label only reaches pods made later); True when a pod was changed."""
        if not owner.queue or owner.size == 0:
            return False
        changed = False
        for pod in pods:
            if pod.labels.get(QUEUE_NAME_LABEL) != owner.queue:
                body = {"metadata": {"labels": {QUEUE_NAME_LABEL: owner.queue}}}
                with contextlib.suppress(errors.NotFound):
                    self._cache.observe(POD, await self._kube.patch(POD, pod.name, body, namespace=pod.namespace))
                    changed = True
        return changed

    async def _follow(self, workload: WorkloadRecord, owner: _Owner, now: datetime.datetime) -> WorkloadRecord:
        """The Workload follows its owner's size and queue: updated while pending; admitted at another size, it is
        evicted (its pod sets are fixed while it holds quota) and, once its pods are stopped, queued again."""
        count = pod_group.count_of(workload)
        queue = str(workload.spec.get("queueName") or "")
        if owner.size == 0 or (count == owner.size and queue == (owner.queue or queue)):
            return workload
        if not workload.holds_quota:
            written = await self._kube.replace(
                WORKLOAD, pod_group.resized(workload, size=owner.size, queue=owner.queue or queue)
            )
            self._cache.observe(WORKLOAD, written)
            message = (
                f"Workload follows its {owner.adapter.kind.kind}: {owner.size} pods in queue {owner.queue or queue}"
            )
            await self._events.record(owner.obj, type="Normal", reason="UpdatedWorkload", message=message, now=now)
            return WorkloadRecord.of(written)
        if count == owner.size or workload.evicted:
            return workload
        kind, name = owner.adapter.kind.kind, owner.obj.name
        message = f"{kind} {name} scaled from {count} to {owner.size} pods: queued again for the new size"
        result = await self._machine.write_status(
            wl_life.evicted(workload, reason=wl_life.RESIZED, message=message, now=now)
        )
        await self._events.record(workload, type="Normal", reason="Evicted", message=message, now=now)
        return result

    async def _create(self, pods: Sequence[Pod], *, size: int | None = None) -> None:
        first = pods[0]
        priority = self._machine.priority(first, template=pod_group.ADAPTER.priority_template(first))
        body = pod_group.workload_for(pods, priority=priority.value, size=size)
        if priority.class_name and priority.source:
            body["spec"]["priorityClassRef"] = priority_class_ref_wire(priority.source, priority.class_name)
        await self._machine.create_workload(body, subjects=pods)

    async def _release(self, pods: Sequence[Pod], workload: WorkloadRecord, infos: Mapping[str, PodSetInfo]) -> None:
        """3. Admitted: the gated pods, up to each PodSet's count, ungated with the flavors (``PodSetMergeError``
        when a pod's node selector conflicts with them)."""
        cq = section(workload.status, "admission").get("clusterQueue", "")
        for pod in pod_group.releasable(pods, workload):
            patch = pod_group.release_patch(pod, infos.get(pod_group.podset_of(pod)))
            result = await self._kube.patch(POD, pod.name, patch, namespace=pod.namespace)
            self._cache.observe(POD, result)
            await self._events.record(pod, type="Normal", reason="Started", message=f"Admitted by ClusterQueue {cq}")
        log.debug("pod group released", extra=object_fields(workload.raw))

    async def _keep(self, workload: WorkloadRecord, group: Sequence[Pod], stopping: Sequence[Pod]) -> WorkloadRecord:
        """A Workload whose every owner is about to be deleted would be garbage-collected with them, and with it
        the eviction and the requeue: the pods' controller (a StatefulSet, which makes them again, gated) owns it
        until the first of those new pods joins (``_adopt`` drops it then), as Kueue's pod finalizers keep a
        group's Workload across its pods' replacement."""
        keeper = pod_group.controller_of(group)
        gone = {p.metadata.get("uid") for p in stopping}
        # Owners that stay: pods of the group not being stopped (pods deleted already, by a scale-down say, do not).
        staying = {p.metadata.get("uid") for p in group} - gone
        owners = list(workload.owner_references)
        if keeper is None or any(o.get("uid") in staying or o.get("uid") == keeper["uid"] for o in owners):
            return workload
        return await self._patch_owners(workload, [*owners, keeper])

    async def _patch_owners(self, workload: WorkloadRecord, owners: list[Any]) -> WorkloadRecord:
        result = await self._kube.patch(
            WORKLOAD, workload.name, {"metadata": {"ownerReferences": owners}}, namespace=workload.namespace
        )
        self._cache.observe(WORKLOAD, result)
        return WorkloadRecord.of(result)

    async def _adopt(self, workload: WorkloadRecord, group: Sequence[Pod], newcomers: Sequence[Pod]) -> WorkloadRecord:
        """The Workload goes only when its last pod goes: pods that joined after it was created own it too
        (references to pods gone are dropped, so a StatefulSet's replaced pods do not pile up, and so is the
        StatefulSet that kept it while its pods were replaced: ``_keep``)."""
        present = {p.metadata.get("uid") for p in group}
        kept = [o for o in workload.owner_references if o.get("uid") in present]
        return await self._patch_owners(workload, [*kept, *(pod_group.owner_ref(p) for p in newcomers)])


class _Gated:
    """The mechanism of pods gated one by one, for one group: what each step of the state machine does to it
    (released is ungated; stopped is deleted, since pods cannot be suspended; nothing to restore)."""

    def __init__(self, sync: PodGroupSync, pods: Sequence[Pod], *, leaving: bool) -> None:
        self._sync = sync
        self._pods = pods
        self._leaving = leaving
        self._running = pod_group.running(pods)
        self._done, self._succeeded = pod_group.finished(pods)
        waiting = any(pod_group.is_gated(p) for p in pods)
        running = bool(self._running)
        self.state = JobState(done=self._done, waiting=waiting, running=running, active_pods=running or leaving)
        self.subjects = pods

    def ended(self) -> Finish:
        message = "All pods succeeded" if self._succeeded else "Some pods failed"
        return Finish(done=self._done, succeeded=self._succeeded, message=message)

    async def let_go(self, workload: WorkloadRecord) -> None:
        return None  # a pod group holds no finalizer on its Workload

    async def restore(self, workload: WorkloadRecord) -> None:
        return None  # a deleted pod is made again from its owner's template: nothing of the flavor stays

    async def fits(self, workload: WorkloadRecord, now: datetime.datetime) -> bool:
        return True  # pods beyond an admitted count are not released (``pod_group.releasable``)

    async def release(self, workload: WorkloadRecord, infos: Mapping[str, PodSetInfo], now: datetime.datetime) -> None:
        await self._sync._release(self._pods, workload, infos)

    def pods_ready(self, workload: WorkloadRecord) -> bool:
        return pod_group.pods_ready(self._pods, workload)

    async def stop(self, workload: WorkloadRecord, now: datetime.datetime) -> None:
        await self._sync._stop(workload, self._pods, self._running, leaving=self._leaving, now=now)
