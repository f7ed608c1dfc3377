"""What kinds that suspend as a whole (``spec.suspend``) and hold several pod templates share.

Owns: the owned Workload a job gets, the stopping mark, injecting and restoring every pod template of a job
given where its templates live, and the per-pod-set admission check. A kind module describes its templates as
``TemplateSlot``s (a pod set name, a path to its pod template and its pod count) and calls these. Pure.
"""

from __future__ import annotations

import copy
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
from webhook.api.quantity import ZERO, parse_quantity
from webhook.api.resources import pod_requests
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


def pod_sets(job: Mapping[str, Any], slots: Sequence[TemplateSlot], defaults: PodDefaults) -> list[JSON]:
    return [{"name": s.name, "count": s.count, "template": defaults.apply(get_path(job, s.path) or {})} for s in slots]


def is_suspended(job: Mapping[str, Any]) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def suspended(job: Mapping[str, Any]) -> JSON:
    result = copy.deepcopy(dict(job))
    result.setdefault("spec", {})["suspend"] = True
    result["metadata"].setdefault("annotations", {})[STOPPING_ANNOTATION] = "true"
    return result


def is_stopping(job: Mapping[str, Any]) -> bool:
    return STOPPING_ANNOTATION in ((job.get("metadata") or {}).get("annotations") or {})


def released(job: Mapping[str, Any], slots: Sequence[TemplateSlot], infos: Mapping[str, PodSetInfo]) -> JSON:
    result = copy.deepcopy(dict(job))
    for slot in slots:
        info = infos.get(slot.name)
        if info is not None:
            set_path(result, slot.path, inject(get_path(result, slot.path) or {}, info))
    result["spec"]["suspend"] = False
    (result["metadata"].get("annotations") or {}).pop(STOPPING_ANNOTATION, None)
    return result


def restored(job: Mapping[str, Any], slots: Sequence[TemplateSlot], workload: Mapping[str, Any]) -> JSON:
    result = copy.deepcopy(dict(job))
    recorded = {p.get("name"): p for p in (workload.get("spec") or {}).get("podSets") or []}
    for slot in slots:
        original = recorded.get(slot.name)
        if original is not None:
            current = get_path(result, slot.path) or {}
            set_path(result, slot.path, restore(current, original.get("template") or {}))
    annotations = result["metadata"].get("annotations") or {}
    annotations.pop(STOPPING_ANNOTATION, None)
    if not annotations:
        result["metadata"].pop("annotations", None)
    return result


def workload_for(
    job: Mapping[str, Any],
    *,
    kind: JobKind,
    pod_sets: list[JSON],
    priority: int,
    priority_class_name: str | None,
    priority_class_source: str,
) -> JSON:
    """The Workload for ``job``: owned by it, with the ``resource-in-use`` finalizer (as for batch Jobs)."""
    meta = job["metadata"]
    labels = meta.get("labels") or {}
    spec: JSON = {"podSets": pod_sets, "priority": priority}
    if labels.get(QUEUE_NAME_LABEL):
        spec["queueName"] = labels[QUEUE_NAME_LABEL]
    if priority_class_name and priority_class_source:
        spec["priorityClassRef"] = priority_class_ref_wire(priority_class_source, priority_class_name)
    if labels.get(MAX_EXEC_TIME_LABEL) is not None:
        spec["maximumExecutionTimeSeconds"] = int(labels[MAX_EXEC_TIME_LABEL])
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(kind=kind.kind, group=kind.group, namespace=meta["namespace"], name=meta["name"]),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            "finalizers": [RESOURCE_IN_USE_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": kind.api_version,
                    "kind": kind.kind,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def _containers(template: Any) -> Any:
    spec = (template or {}).get("spec") or {}
    return (spec.get("containers"), spec.get("initContainers"))


def matches_workload(
    job: Mapping[str, Any], expected: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]
) -> bool:
    uid = job["metadata"].get("uid")
    owners = (workload.get("metadata") or {}).get("ownerReferences") or []
    if not any(o.get("uid") == uid and o.get("controller") for o in owners):
        return False
    recorded = list((workload.get("spec") or {}).get("podSets") or [])
    if [p.get("name") for p in recorded] != [p["name"] for p in expected]:
        return False
    return all(
        r.get("count") == e["count"] and _containers(r.get("template")) == _containers(e["template"])
        for r, e in zip(recorded, expected, strict=True)
    )


def admission_mismatch(expected: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> str | None:
    """Per pod set: no more pods than admitted, no pod asking more of a resource than admission charged."""
    assignments = {
        a.get("name"): a for a in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    }
    if set(assignments) != {p["name"] for p in expected}:
        return f"the Workload's admission covers pod sets {sorted(map(str, assignments))}, the job has " + str(
            sorted(p["name"] for p in expected)
        )
    for podset in expected:
        admitted = assignments[podset["name"]]
        count = int(admitted.get("count") or podset["count"])
        if podset["count"] > count:
            return f"pod set {podset['name']!r} runs {podset['count']} pods; its admission was for {count}"
        try:
            per_pod = pod_requests((podset["template"] or {}).get("spec") or {})
            charged = {r: parse_quantity(q) for r, q in (admitted.get("resourceUsage") or {}).items()}
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


def queue_name(job: Mapping[str, Any]) -> str | None:
    value = ((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)
    return str(value) if value else None


def owned_by_controller(job: Mapping[str, Any]) -> bool:
    """Created by another controller (a CronJob, a JobSet, ...): left to whatever manages that owner."""
    return any(o.get("controller") for o in (job.get("metadata") or {}).get("ownerReferences") or [])


def is_stamped(job: Mapping[str, Any]) -> bool:
    """The mutating webhook saw this job and stamped its Workload's name on it."""
    return WORKLOAD_NAME_ANNOTATION in ((job.get("metadata") or {}).get("annotations") or {})


def adopted(job: Mapping[str, Any], *, queue: str | None, workload_name: str) -> JSON:
    """What the mutating webhook would have made of ``job``: queue label (when there is one), the Workload
    stamp, and suspended (its controller removes any pods it already created)."""
    result = copy.deepcopy(dict(job))
    meta = result["metadata"]
    if queue:
        meta.setdefault("labels", {})[QUEUE_NAME_LABEL] = queue
    meta.setdefault("annotations", {})[WORKLOAD_NAME_ANNOTATION] = workload_name
    result.setdefault("spec", {})["suspend"] = True
    return result


def prebuilt_workload_name(job: Mapping[str, Any]) -> str | None:
    """The Workload a user created for this job (``kueue.x-k8s.io/prebuilt-workload-name``), if it names one."""
    value = ((job.get("metadata") or {}).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL)
    return str(value) if value else None


def job_workload_name(job: Mapping[str, Any], kind: JobKind) -> str:
    """The name of the Workload that represents ``job``: its prebuilt one, or the one Turnstile creates."""
    meta = job.get("metadata") or {}
    prebuilt = prebuilt_workload_name(job)
    if prebuilt is not None:
        return prebuilt
    return workload_name(kind=kind.kind, group=kind.group, namespace=meta["namespace"], name=meta["name"])


def adopted_prebuilt(workload: Mapping[str, Any], job: Mapping[str, Any], kind: JobKind) -> JSON:
    """A prebuilt Workload made the job's own (as Kueue does): a controller owner reference and the job UID label."""
    result = copy.deepcopy(dict(workload))
    meta, job_meta = result["metadata"], job["metadata"]
    owner = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": job_meta["name"],
        "uid": job_meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), owner]
    meta.setdefault("labels", {})[JOB_UID_LABEL] = job_meta["uid"]
    return result


def prebuilt_in_sync(expected: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> bool:
    """Whether a user's prebuilt Workload describes the job: the same pod sets, counts, and containers asking
    for the same resources (Kueue's comparison; the rest of a container the API server defaults differently
    in a Job than in a Workload, so it is not compared)."""
    recorded = list((workload.get("spec") or {}).get("podSets") or [])
    if [p.get("name") for p in recorded] != [p["name"] for p in expected] or len(recorded) != len(expected):
        return False

    def resources(template: Any, key: str) -> list[Any]:
        return [c.get("resources") or {} for c in ((template or {}).get("spec") or {}).get(key) or []]

    return all(
        r.get("count") == e["count"]
        and all(
            resources(r.get("template"), k) == resources(e["template"], k) for k in ("containers", "initContainers")
        )
        for r, e in zip(recorded, expected, strict=True)
    )
