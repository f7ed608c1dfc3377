"""What kinds that suspend as a whole (``spec.suspend``) and hold several pod templates share.

Owns: the owned Workload a job gets, the stopping mark, injecting and restoring every pod template of a job
given where its templates live, and the per-pod-set admission check. A kind module describes its templates as
``TemplateSlot``s (a pod set name, a path to its pod template and its pod count) and calls these. Pure.
Reads go through the typed views of ``webhook.api`` (``ObjectView``, ``WorkloadRecord``), which each function
takes (its caller made them once, at its edge); writes copy the object whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.api.constants import (
    API_VERSION,
    JOB_UID_LABEL,
    MAX_EXEC_TIME_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
    RESOURCE_IN_USE_FINALIZER,
    STOPPING_ANNOTATION,
    WORKLOAD_NAME_ANNOTATION,
)
from webhook.api.copies import writable
from webhook.api.quantity import ZERO, parse_quantity
from webhook.api.resources import pod_requests
from webhook.api.views import ObjectView, PodTemplateView, WorkloadRecord
from webhook.api.workload import priority_class_ref_wire
from webhook.jobs.adapter import JobKind
from webhook.jobs.naming import workload_name
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo, inject, restore

JSON = dict[str, Any]


@dataclass(frozen=True)
class TemplateSlot:
    """One pod set of a job: its name, the path from the object's root to its pod template, its pod count."""

    name: str
    path: tuple[str | int, ...]
    count: int


def get_path(obj: Any, path: Sequence[str | int]) -> Any:
    for step in path:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, Mapping) else None
        if obj is None:
            return None
    return obj


def set_path(obj: Any, path: Sequence[str | int], value: Any) -> None:
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value


def template_at(job: ObjectView, path: Sequence[str | int]) -> PodTemplateView:
    """The pod template at ``path`` in ``job``; an empty one when there is none (or not an object) there."""
    template = get_path(job.raw, path)
    return PodTemplateView.of(template if isinstance(template, Mapping) else None)


def pod_sets(job: ObjectView, slots: Sequence[TemplateSlot], defaults: PodDefaults) -> list[JSON]:
    raw = job.raw
    return [
        {"name": s.name, "count": s.count, "template": defaults.apply(PodTemplateView.of(get_path(raw, s.path)))}
        for s in slots
    ]


def is_suspended(job: ObjectView) -> bool:
    return bool(job.spec.get("suspend"))


def suspended(job: ObjectView) -> JSON:
    result = writable(job.raw)
    result.setdefault("spec", {})["suspend"] = True
    result["metadata"].setdefault("annotations", {})[STOPPING_ANNOTATION] = "true"
    return result


def is_stopping(job: ObjectView) -> bool:
    return STOPPING_ANNOTATION in job.annotations


def released(job: ObjectView, slots: Sequence[TemplateSlot], infos: Mapping[str, PodSetInfo]) -> JSON:
    result = writable(job.raw)
    for slot in slots:
        info = infos.get(slot.name)
        if info is not None:
            set_path(result, slot.path, inject(PodTemplateView.of(get_path(result, slot.path)), info))
    result["spec"]["suspend"] = False
    (result["metadata"].get("annotations") or {}).pop(STOPPING_ANNOTATION, None)
    return result


def restored(job: ObjectView, slots: Sequence[TemplateSlot], workload: WorkloadRecord) -> JSON:
    result = writable(job.raw)
    recorded = {p.name: p for p in workload.pod_sets}
    for slot in slots:
        original = recorded.get(slot.name)
        if original is not None:
            current = get_path(result, slot.path) or {}
            set_path(result, slot.path, restore(PodTemplateView.of(current), original.template))
    annotations = result["metadata"].get("annotations") or {}
    annotations.pop(STOPPING_ANNOTATION, None)
    if not annotations:
        result["metadata"].pop("annotations", None)
    return result


def workload_for(
    job: ObjectView,
    *,
    kind: JobKind,
    pod_sets: list[JSON],
    priority: int,
    priority_class_name: str | None,
    priority_class_source: str,
) -> JSON:
    """The Workload for ``job``: owned by it, with the ``resource-in-use`` finalizer (as for batch Jobs)."""
    spec: JSON = {"podSets": pod_sets, "priority": priority}
    if queue := job.labels.get(QUEUE_NAME_LABEL):
        spec["queueName"] = queue
    if priority_class_name and priority_class_source:
        spec["priorityClassRef"] = priority_class_ref_wire(priority_class_source, priority_class_name)
    if (seconds := job.labels.get(MAX_EXEC_TIME_LABEL)) is not None:
        spec["maximumExecutionTimeSeconds"] = int(seconds)
    name = workload_name(kind=kind.kind, group=kind.group, namespace=job.namespace, name=job.name)
    return owned_workload(job, name=name, owner_api_version=kind.api_version, owner_kind=kind.kind, spec=spec)


def owned_workload(job: ObjectView, *, name: str, owner_api_version: str, owner_kind: str, spec: JSON) -> JSON:
    """A Workload named ``name`` with ``spec``, controlled by ``job``, with Kueue's ``resource-in-use`` finalizer:
    while it holds quota, deleting it must not free the quota before the job has stopped."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": {JOB_UID_LABEL: job.uid},
            "finalizers": [RESOURCE_IN_USE_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": owner_api_version,
                    "kind": owner_kind,
                    "name": job.name,
                    "uid": job.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def matches_workload(job: ObjectView, expected: Sequence[Mapping[str, Any]], workload: WorkloadRecord) -> bool:
    if not workload.controlled_by(job.metadata.get("uid")):
        return False
    recorded = workload.pod_sets
    if [p.name for p in recorded] != [p["name"] for p in expected]:
        return False
    return all(
        r.count == e["count"] and r.template.containers == PodTemplateView.of(e["template"]).containers
        for r, e in zip(recorded, expected, strict=True)
    )


def admission_mismatch(expected: Sequence[Mapping[str, Any]], workload: WorkloadRecord) -> str | None:
    """Per pod set: no more pods than admitted, no pod asking more of a resource than admission charged."""
    assignments = {a.name: a for a in workload.assignments}
    if set(assignments) != {p["name"] for p in expected}:
        return f"the Workload's admission covers pod sets {sorted(map(str, assignments))}, the job has " + str(
            sorted(p["name"] for p in expected)
        )
    for podset in expected:
        admitted = assignments[podset["name"]]
        count = admitted.count or int(podset["count"])
        if podset["count"] > count:
            return f"pod set {podset['name']!r} runs {podset['count']} pods; its admission was for {count}"
        try:
            per_pod = pod_requests(PodTemplateView.of(podset["template"]).spec)
            charged = {r: parse_quantity(q) for r, q in admitted.resource_usage.items()}
        except ValueError as exc:
            return f"cannot compare the job's requests with its admission: {exc}"
        for resource, quantity in sorted(per_pod.items()):
            allowed = charged.get(resource, ZERO)
            if quantity > ZERO and quantity * max(count, 1) > allowed:
                return (
                    f"each pod of pod set {podset['name']!r} asks for {quantity} {resource}; the Workload was "
                    f"admitted with {allowed} {resource} for {count} pods"
                )
    return None


def queue_name(job: ObjectView) -> str | None:
    return job.label(QUEUE_NAME_LABEL)


def owned_by_controller(job: ObjectView) -> bool:
    """Created by another controller (a CronJob, a JobSet, ...): left to whatever manages that owner."""
    return job.has_controller


def is_stamped(job: ObjectView) -> bool:
    """The mutating webhook saw this job and stamped its Workload's name on it."""
    return WORKLOAD_NAME_ANNOTATION in job.annotations


def adopted(job: ObjectView, *, queue: str | None, workload_name: str) -> JSON:
    """What the mutating webhook would have made of ``job``: queue label (when there is one), the Workload
    stamp, and suspended (its controller removes any pods it already created)."""
    result = writable(job.raw)
    meta = result["metadata"]
    if queue:
        meta.setdefault("labels", {})[QUEUE_NAME_LABEL] = queue
    meta.setdefault("annotations", {})[WORKLOAD_NAME_ANNOTATION] = workload_name
    result.setdefault("spec", {})["suspend"] = True
    return result


def prebuilt_workload_name(job: ObjectView) -> str | None:
    """The Workload a user created for this job (``kueue.x-k8s.io/prebuilt-workload-name``), if it names one."""
    return job.label(PREBUILT_WORKLOAD_LABEL)


def job_workload_name(job: ObjectView, kind: JobKind) -> str:
    """The name of the Workload that represents ``job``: its prebuilt one, or the one Turnstile creates."""
    prebuilt = prebuilt_workload_name(job)
    if prebuilt is not None:
        return prebuilt
    return workload_name(kind=kind.kind, group=kind.group, namespace=job.namespace, name=job.name)


def adopted_prebuilt(workload: WorkloadRecord, job: ObjectView, kind: JobKind) -> JSON:
    """A prebuilt Workload made the job's own (as Kueue does): a controller owner reference and the job UID label."""
    result = writable(workload.raw)
    meta = result["metadata"]
    owner = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), owner]
    meta.setdefault("labels", {})[JOB_UID_LABEL] = job.uid
    return result


def prebuilt_in_sync(expected: Sequence[Mapping[str, Any]], workload: WorkloadRecord) -> bool:
    """Whether a user's prebuilt Workload describes the job: the same pod sets, counts, and containers asking
    for the same resources (Kueue's comparison; the rest of a container the API server defaults differently
    in a Job than in a Workload, so it is not compared)."""
    recorded = workload.pod_sets
    if [p.name for p in recorded] != [p["name"] for p in expected] or len(recorded) != len(expected):
        return False
    return all(
        r.count == e["count"]
        and r.template.container_resources == PodTemplateView.of(e["template"]).container_resources
        for r, e in zip(recorded, expected, strict=True)
    )
