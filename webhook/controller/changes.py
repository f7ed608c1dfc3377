"""Which reconciler work a change in the cache makes due: work proportional to change.

Owns: ``ChangeRouter``, which listens to the cache and marks, in one ``WorkQueue`` each, the jobs (per kind), pod
groups and Workloads a change concerns:
- a job → that job, the jobs it controls (a JobSet's Jobs: whether their parent exists decides whether they are
  left to it), and the Workloads it owns (orphans, once it is gone);
- a Workload → itself, the jobs that go with its name (the one Turnstile created for them, or the prebuilt one they
  name) or own it, and the pod group of its name;
- a pod → its pod group (before and after the change, should its group label move);
- a pod group's sizing owner (a StatefulSet) → the group it names (its size and queue are read from it) and the
  Workloads it owns;
- anything else (a queue, a flavor, a namespace, a LimitRange, a priority class...) may concern every object:
  everything is marked.
Quiet observations (a pending reason, a queue's status we wrote ourselves) mark nothing. The indexes it keeps
for this (Workload name → jobs, controller uid → jobs, pod group → pods) are built from what the cache already
holds, then kept up to date from every change, quiet or not.
Must not: sync anything, or decide what a job needs; it only says where to look.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from webhook.api.views import ObjectView, Pod
from webhook.controller.cache import Change, ClusterCache
from webhook.controller.workqueue import WorkQueue
from webhook.jobs import pod_group, registry, suspendable
from webhook.jobs.adapter import JobKind, PodOwnerAdapter
from webhook.kube.objects import ObjectKey
from webhook.kube.resources import POD, WORKLOAD, Resource

JobRef = tuple[Resource, ObjectKey]


class ChangeRouter:
    def __init__(
        self,
        cache: ClusterCache,
        *,
        job_kinds: Mapping[Resource, JobKind],
        frameworks: frozenset[str],
        pod_groups: bool,
        group_owners: Mapping[Resource, PodOwnerAdapter] | None = None,
    ) -> None:
        self._cache = cache
        self._kinds = dict(job_kinds)
        self._frameworks = frameworks
        self._pod_groups = pod_groups
        self._group_owners = dict(group_owners or {}) if pod_groups else {}
        self.jobs: dict[Resource, WorkQueue[ObjectKey]] = {res: WorkQueue() for res in self._kinds}
        self.groups: WorkQueue[ObjectKey] = WorkQueue()  # (namespace, Workload name)
        self.workloads: WorkQueue[ObjectKey] = WorkQueue()
        self._by_workload: dict[ObjectKey, set[JobRef]] = {}
        self._children: dict[str, set[JobRef]] = {}
        self._group_pods: dict[ObjectKey, set[ObjectKey]] = {}
        for resource in self._kinds:
            for job in cache.views(resource, ObjectView):
                self._index_job(resource, job.key, job, add=True)
        if pod_groups:
            for pod in cache.pods():
                self._index_pod(pod.key, pod, add=True)
        cache.listen(self._on_change)

    def add_all(self) -> None:
        """A full pass everywhere (the periodic resync)."""
        for queue in self.queues():
            queue.add_all()

    def group_pods(self, group: ObjectKey) -> list[Pod]:
        """The pods of one pod group, by name (a full pass lists them in the cache's order instead)."""
        found = (self._cache.viewed(POD, key, Pod) for key in sorted(self._group_pods.get(group, ())))
        return [pod for pod in found if pod is not None]

    def queues(self) -> tuple[WorkQueue[ObjectKey], ...]:
        return (*self.jobs.values(), self.groups, self.workloads)

    def next_retry(self) -> datetime.datetime | None:
        """When the first failed object of any kind is due to be tried again (None: no retry is owed)."""
        retries = [q.next_retry() for q in self.queues()]  # one call per queue, not a generator resumed between
        return min((t for t in retries if t is not None), default=None)

    # -- routing ------------------------------------------------------------------------------------------

    def _on_change(self, change: Change, quiet: bool) -> None:
        resource = change.resource
        if resource in self._kinds:
            self._job_changed(change, mark=not quiet)
        elif resource == POD:
            self._pod_changed(change, mark=not quiet)
        elif resource == WORKLOAD:
            if not quiet:
                self._workload_changed(change)
        elif resource in self._group_owners:
            if not quiet:
                self._group_owner_changed(change)
        elif not quiet:
            self.add_all()

    def _job_changed(self, change: Change, *, mark: bool) -> None:
        resource, key = change.resource, change.key
        if change.old is not None:
            self._index_job(resource, key, self._cache.view(resource, change.old, ObjectView), add=False)
        if change.new is not None:
            self._index_job(resource, key, self._cache.view(resource, change.new, ObjectView), add=True)
        if change.new is None:
            self.jobs[resource].forget(key)  # gone: no retry owed (the pass below finds it gone)
        if not mark:
            return
        self.jobs[resource].add(key)
        for view in self._views(change):
            uid = view.metadata.get("uid")
            if not uid:
                continue
            for child_resource, child in self._children.get(uid, ()):
                self.jobs[child_resource].add(child)
            for workload in self._cache.workloads_owned_by(uid):
                self.workloads.add(workload.key)

    def _workload_changed(self, change: Change) -> None:
        key = change.key
        if change.new is None:
            self.workloads.forget(key)
        self.workloads.add(key)
        for resource, job in self._by_workload.get(key, ()):
            self.jobs[resource].add(job)
        for view in self._views(change):
            for owner in view.owner_references:
                group = str(owner.get("apiVersion", "")).rpartition("/")[0]
                adapter = registry.by_kind(group, str(owner.get("kind", "")), self._frameworks)
                if adapter is None:
                    continue
                for resource, kind in self._kinds.items():
                    if kind == adapter.kind:
                        self.jobs[resource].add(ObjectKey(key.namespace, str(owner.get("name", ""))))
        if key in self._group_pods:
            self.groups.add(key)

    def _pod_changed(self, change: Change, *, mark: bool) -> None:
        if not self._pod_groups:
            return
        for obj, add in ((change.old, False), (change.new, True)):
            if obj is None:
                continue
            group = self._index_pod(change.key, self._cache.view(POD, obj, Pod), add=add)
            if mark:
                self.groups.add(group)

    def _group_owner_changed(self, change: Change) -> None:
        adapter = self._group_owners[change.resource]
        for view in self._views(change, adapter.view):
            group = adapter.pod_group(view, change.key.namespace)
            if group:
                self.groups.add(ObjectKey(change.key.namespace, group))
            uid = view.metadata.get("uid")
            for workload in self._cache.workloads_owned_by(str(uid)) if uid else ():
                self.workloads.add(workload.key)

    # -- indexes ------------------------------------------------------------------------------------------

    def _views(self, change: Change, kind: type[ObjectView] = ObjectView) -> list[ObjectView]:
        """The object before and after the change (those there are), as views."""
        return [self._cache.view(change.resource, o, kind) for o in (change.old, change.new) if o is not None]

    def _index_job(self, resource: Resource, key: ObjectKey, job: ObjectView, *, add: bool) -> None:
        ref = (resource, key)
        entries: list[tuple[dict[Any, set[JobRef]], Any]] = [
            (self._by_workload, ObjectKey(key.namespace, suspendable.job_workload_name(job, self._kinds[resource])))
        ]
        for owner in job.owner_references:
            if owner.get("controller") and owner.get("uid"):
                entries.append((self._children, str(owner["uid"])))
        for index, at in entries:
            if add:
                index.setdefault(at, set()).add(ref)
            elif at in index:
                index[at].discard(ref)
                if not index[at]:
                    del index[at]

    def _index_pod(self, key: ObjectKey, pod: Pod, *, add: bool) -> ObjectKey:
        group = ObjectKey(key.namespace, pod_group.workload_name([pod]))
        if add:
            self._group_pods.setdefault(group, set()).add(key)
        elif group in self._group_pods:
            self._group_pods[group].discard(key)
            if not self._group_pods[group]:
                del self._group_pods[group]
        return group
