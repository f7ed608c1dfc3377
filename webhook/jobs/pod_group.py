"""The Pod integration: a plain pod, or a group of pods (``kueue.x-k8s.io/pod-group-name``), as one Workload.

A group's Workload exists once all ``pod-group-total-count`` pods exist; it has one PodSet per pod shape (pods
whose containers ask for the same resources), named by a short hash of that shape, and a (non-controller) owner
reference to every pod, so it goes when the last pod goes. A fast-admission group
(``kueue.x-k8s.io/pod-group-fast-admission: "true"``, a StatefulSet's) gets its Workload with its first pod: one
PodSet of that pod's shape for the whole total count; pods that come later join its owners, and a pod of another
shape is never released. Admission removes the ``kueue.x-k8s.io/admission``
scheduling gate and adds the flavors' node selector and tolerations (what the API server lets change on a gated
pod). Pure: the reconciler decides when and writes.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from webhook.api.conditions import parse_time
from webhook.api.constants import (
    ADMISSION_SCHEDULING_GATE,
    API_VERSION,
    IS_GROUP_WORKLOAD_ANNOTATION,
    POD_GROUP_FAST_ADMISSION_ANNOTATION,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    QUEUE_NAME_LABEL,
)
from webhook.api.copies import writable
from webhook.api.views import ObjectView, Pod, PodTemplateView, WorkloadRecord, section
from webhook.jobs.adapter import JobKind
from webhook.jobs.naming import pod_workload_name
from webhook.jobs.podset import PodSetInfo, PodSetMergeError

JSON = dict[str, Any]


def group_of(pod: Pod) -> str:
    """The group name, or "" for a pod on its own."""
    return str(pod.labels.get(POD_GROUP_NAME_LABEL, ""))


def total_count(pods: Sequence[Pod]) -> int:
    """The group size the pods declare (the first parsable value; a single pod is a group of one)."""
    for pod in pods:
        raw = pod.annotations.get(POD_GROUP_TOTAL_COUNT_ANNOTATION)
        if raw is not None and str(raw).isdigit():
            return int(raw)
    return 1


def fast_admission(pods: Sequence[Pod]) -> bool:
    """The group's Workload does not wait for all its pods (they come one by one, as a StatefulSet's do)."""
    return any(p.annotations.get(POD_GROUP_FAST_ADMISSION_ANNOTATION) == "true" for p in pods)


def ready_for_workload(pods: Sequence[Pod]) -> bool:
    """Enough of the group exists to create its Workload: all of it, or its first pod under fast admission."""
    return bool(pods) and (len(pods) >= total_count(pods) or fast_admission(pods))


def workload_name(pods: Sequence[Pod]) -> str:
    first = pods[0]
    return pod_workload_name(first.metadata.get("namespace", ""), first.metadata.get("name", ""), group_of(first))


def is_gated(pod: Pod) -> bool:
    return pod.gated(ADMISSION_SCHEDULING_GATE)


def is_terminal(pod: Pod) -> bool:
    return pod.terminal


def running(pods: Sequence[Pod]) -> list[Pod]:
    """The group's pods released and not ended: what holds nodes."""
    return [p for p in pods if not is_gated(p) and not is_terminal(p)]


def is_leaving(pod: Pod) -> bool:
    """Deleted, still there while its containers stop (or its finalizers go)."""
    return pod.deletion_timestamp is not None


def still_running(pod: Pod, now: datetime.datetime) -> bool:
    """A deleted pod that still holds its node: Running until its kubelet has stopped it, as Kueue counts a
    group active (its quota stays) unless the pod is stuck past its grace period (a lost node)."""
    deleted = pod.deletion_timestamp
    if deleted is None or pod.phase != "Running":
        return False
    try:
        deadline = parse_time(deleted)
    except ValueError:
        return True
    return now <= deadline + datetime.timedelta(seconds=pod.deletion_grace_seconds)


def _counted(workload: WorkloadRecord) -> int:
    return sum(int(ps.count or 0) for ps in workload.pod_sets)


def pods_ready(pods: Sequence[Pod], workload: WorkloadRecord) -> bool:
    """As many pods ready (or succeeded) as the Workload counts: the group runs as admitted."""
    done = [p for p in pods if p.ready or p.phase == "Succeeded"]
    return len(done) >= _counted(workload)


def finished(pods: Sequence[Pod]) -> tuple[bool, bool]:
    """(finished, succeeded): every pod of a complete group has ended; succeeded when none failed."""
    if not pods:
        return False, False
    if len(pods) < total_count(pods) or not all(is_terminal(p) for p in pods):
        return False, False
    return True, all(p.phase == "Succeeded" for p in pods)


def role_hash(pod: Pod) -> str:
    """A short hash of what makes pods interchangeable for quota: their containers' images and resources."""
    spec = pod.spec
    shape: list[Any] = [
        [(c.get("name"), c.get("image"), section(c, "resources")) for c in spec.get(kind) or []]
        for kind in ("initContainers", "containers")
    ]
    shape.append([section(spec, "overhead"), spec.get("priorityClassName") or ""])
    return hashlib.sha256(orjson.dumps(shape, option=orjson.OPT_SORT_KEYS)).hexdigest()[:8]


def _template(pod: Pod) -> JSON:
    spec = writable(pod.spec)
    for key in ("nodeName", "schedulingGates"):
        spec.pop(key, None)
    return {"metadata": {"labels": dict(pod.labels)}, "spec": spec}


def workload_for(pods: Sequence[Pod], *, priority: int, size: int | None = None) -> JSON:
    """The Workload of a complete group (or one pod); one PodSet per pod shape, sorted by name. A fast-admission
    group's is one PodSet of its first pod's shape, for ``size`` pods (the live owner's count) or else its total
    count."""
    views = list(pods)
    roles: dict[str, list[Pod]] = {}
    ordered = sorted(views, key=lambda p: p.metadata.get("name", ""))
    for pod in ordered:
        roles.setdefault(role_hash(pod), []).append(pod)
    counts = {role: len(members) for role, members in roles.items()}
    if fast_admission(views):
        role = role_hash(ordered[0])
        roles, counts = {role: roles[role]}, {role: total_count(views) if size is None else size}
    first = views[0]
    grouped = bool(group_of(first))
    workload: JSON = {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(views),
            "namespace": first.metadata.get("namespace"),
            "ownerReferences": [owner_ref(p) for p in views],
        },
        "spec": {
            "queueName": first.labels.get(QUEUE_NAME_LABEL, ""),
            "priority": priority,
            "podSets": [
                {"name": role, "count": counts[role], "template": _template(members[0])}
                for role, members in sorted(roles.items())
            ],
        },
    }
    if grouped:
        workload["metadata"]["annotations"] = {IS_GROUP_WORKLOAD_ANNOTATION: "true"}
    return workload


def release_patch(pod: Pod, info: PodSetInfo | None) -> JSON:
    """A strategic-free merge patch body: the gate removed, the flavors' selector and tolerations added.

    Returned as the whole new ``spec.schedulingGates``/``nodeSelector``/``tolerations`` plus the PodSet label, so
    a JSON merge patch replaces those lists exactly.
    """
    spec = pod.spec
    gates = [g for g in pod.scheduling_gates if g.get("name") != ADMISSION_SCHEDULING_GATE]
    new_spec: JSON = {"schedulingGates": gates or None}
    meta: JSON = {}
    if info is not None:
        selector = dict(section(spec, "nodeSelector"))
        for key, value in info.node_selector.items():
            if selector.get(key, value) != value:
                raise PodSetMergeError(
                    f"nodeSelector {key}={selector[key]!r} conflicts with the admitted flavor's {value!r}"
                )
            selector[key] = value
        if selector:
            new_spec["nodeSelector"] = selector
        tolerations = list(spec.get("tolerations") or [])
        tolerations += [dict(t) for t in info.tolerations if t not in tolerations]
        if tolerations:
            new_spec["tolerations"] = tolerations
        meta = {"labels": dict(info.labels)}
    patch: JSON = {"spec": new_spec}
    if meta:
        patch["metadata"] = meta
    return patch


def podset_of(pod: Pod) -> str:
    return role_hash(pod)


def owner_ref(pod: Pod) -> JSON:
    meta = pod.metadata
    return {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"), "uid": meta.get("uid")}


def controller_of(pods: Sequence[Pod]) -> JSON | None:
    """The controller every pod of the group shares (a StatefulSet), as a plain owner reference; None if they
    have none or not the same one."""
    refs = [next((o for o in p.owner_references if o.get("controller")), None) for p in pods]
    if not refs or refs[0] is None or any(r is None or r.get("uid") != refs[0].get("uid") for r in refs):
        return None
    first = refs[0]
    return {key: first[key] for key in ("apiVersion", "kind", "name", "uid")}


def count_of(workload: WorkloadRecord) -> int:
    """All the pods the Workload counts."""
    return _counted(workload)


def resized(workload: WorkloadRecord, *, size: int, queue: str) -> JSON:
    """A pending fast-admission group's Workload for ``size`` pods in ``queue`` (it has one PodSet)."""
    spec = dict(workload.spec)
    spec["podSets"] = [dict(ps.raw) | {"count": size} for ps in workload.pod_sets]
    spec["queueName"] = queue
    return dict(workload.raw) | {"spec": spec}


def unowned(pods: Sequence[Pod], workload: WorkloadRecord) -> list[Pod]:
    """Pods of the group the Workload does not name as owners yet (they came after it, under fast admission)."""
    uids = {o.get("uid") for o in workload.owner_references}
    return [p for p in pods if p.metadata.get("uid") not in uids]


def releasable(pods: Sequence[Pod], workload: WorkloadRecord) -> list[Pod]:
    """The gated pods admission lets go: per PodSet, no more pods running ungated than its admitted count (a group
    may hold more pods than its Workload counts: extra or replacement pods wait for one to end); a pod whose shape
    is no PodSet of the Workload is never released."""
    counts = {ps.name: int(ps.count or 0) for ps in workload.pod_sets}
    for pod in pods:
        if not is_gated(pod) and not is_terminal(pod) and podset_of(pod) in counts:
            counts[podset_of(pod)] -= 1
    chosen: list[Pod] = []
    for pod in sorted(pods, key=lambda p: p.metadata.get("name", "")):
        role = podset_of(pod)
        if is_gated(pod) and counts.get(role, 0) > 0:
            counts[role] -= 1
            chosen.append(pod)
    return chosen


class PodGroupAdapter:
    """Plain pods and pod groups: managed through their pods (gated, then ungated), by the pod group sync."""

    framework = "pod"
    kind = JobKind("", "v1", "pods", "Pod")
    view = Pod
    managed_through_pods = True
    pod_owner = False
    children: tuple[JobKind, ...] = ()

    def priority_template(self, job: ObjectView) -> PodTemplateView:
        return PodTemplateView(job.raw, job.metadata, job.spec)  # a pod is its own template


ADAPTER = PodGroupAdapter()
