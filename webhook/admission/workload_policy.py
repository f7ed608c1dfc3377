"""Workload validation and defaulting: pod sets well formed, admission consistent with pod sets, and what is
fixed while quota is reserved (pod sets, queue, admission, priority source) kept fixed.

Objects are read in either API version (``priorityClassSource`` or ``priorityClassRef``), through the checked
view of the review (``review.Reviewed``). Covers writes to ``workloads`` and ``workloads/status``.
Must not: read the cluster.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from webhook.admission import names, quantity
from webhook.admission.fielderror import (
    FieldError,
    child,
    forbidden,
    immutable,
    index,
    invalid,
    key,
    required,
)
from webhook.admission.options import AdmissionOptions
from webhook.admission.review import Entry, Request, Reviewed
from webhook.admission.verdict import ALLOW, Verdict, judge
from webhook.admission.view import ClusterView
from webhook.api import constants as c

CONDITION_STATUSES = ("True", "False", "Unknown")
_RESERVED_RESOURCE = "pods"


def has_condition(workload: Reviewed, condition: str) -> bool:
    for cond in workload.sequence("status", "conditions"):
        if isinstance(cond, dict) and cond.get("type") == condition:
            return cond.get("status") == "True"
    return False


def reserves_quota(workload: Reviewed) -> bool:
    return has_condition(workload, c.COND_QUOTA_RESERVED)


def validate(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    if not request.has_object or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    workload = request.view
    old = request.old_view if request.operation == "UPDATE" and request.has_old_object else None
    errors = workload_errors(workload, old)
    if old is not None:
        errors += update_errors(workload, old)
        if not options.is_trusted(request.username):
            errors += _priority_errors(workload, old)
    return judge(errors)


def _priority_errors(new: Reviewed, old: Reviewed) -> list[FieldError]:
    """A Workload's priority comes from its priority class, set by Turnstile: nobody else may raise (or lower)
    it in place, or one tenant could preempt another by editing a number."""
    new_spec, old_spec = new.mapping("spec"), old.mapping("spec")
    errors = []
    for field in ("priority", "priorityClassRef"):
        if new_spec.get(field) != old_spec.get(field):
            errors.append(
                forbidden(
                    child("spec", field),
                    "is set by Turnstile from the job's priority class; change the job's "
                    f"{c.PRIORITY_CLASS_LABEL} label instead",
                )
            )
    return errors


def workload_errors(workload: Reviewed, old: Reviewed | None) -> list[FieldError]:
    errors: list[FieldError] = []
    raw_sets = workload.sequence("spec", "podSets")
    if not raw_sets:
        errors.append(required("spec.podSets", "a Workload needs at least one pod set"))
    if len(raw_sets) > c.MAX_PODSETS:
        errors.append(invalid("spec.podSets", len(raw_sets), f"at most {c.MAX_PODSETS} pod sets"))
    counts: dict[str, int] = {}
    with_min = 0
    for i, ps in enumerate(raw_sets):
        path = index("spec.podSets", i)
        if not isinstance(ps, dict):
            errors.append(invalid(path, ps, "must be a pod set object"))
            continue
        name = ps.get("name", c.DEFAULT_PODSET_NAME)
        if not isinstance(name, str) or (problem := names.dns1123_label(name)):
            errors.append(invalid(child(path, "name"), name, problem or "must be a string"))
        elif name in counts:
            errors.append(invalid(child(path, "name"), name, "pod set names must be unique"))
        count = ps.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            errors.append(invalid(child(path, "count"), count, "must be a whole number, 0 or more"))
            count = 0
        counts[str(name)] = count
        min_count = ps.get("minCount")
        if min_count is not None:
            with_min += 1
            if isinstance(min_count, bool) or not isinstance(min_count, int) or not 1 <= min_count <= count:
                errors.append(invalid(child(path, "minCount"), min_count, f"must be between 1 and count ({count})"))
        errors += _template_resource_errors(Entry(ps), path)
    if with_min > 1:
        errors.append(invalid("spec.podSets", with_min, "at most one pod set can use minCount"))
    if reserves_quota(workload):
        errors += _admission_errors(workload, old, counts)
    errors += _condition_errors(workload)
    errors += _reclaimable_errors(workload, counts)
    return errors


def _template_resource_errors(ps: Entry, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for list_name in ("initContainers", "containers"):
        for j, container in enumerate(ps.sequence("template", "spec", list_name)):
            if not isinstance(container, dict):
                continue
            cpath = index(child(path, f"template.spec.{list_name}"), j)
            for kind in ("requests", "limits"):
                errors += _resource_list_errors(
                    Entry(container).mapping("resources", kind), child(cpath, f"resources.{kind}")
                )
    return errors


def _resource_list_errors(resources: Mapping[str, object], path: str) -> list[FieldError]:
    """A resource list (``requests`` or ``limits``): a quantity per resource name, each checked."""
    errors: list[FieldError] = []
    for name, raw in resources.items():
        if name == _RESERVED_RESOURCE:
            errors.append(invalid(key(path, name), name, 'the resource name "pods" is reserved for Turnstile'))
        value = quantity.parse(raw)
        if value is None:
            errors.append(invalid(key(path, name), raw, "must be a quantity such as 500m or 2Gi (at most 100 digits)"))
        elif value < 0:
            errors.append(invalid(key(path, name), raw, "must be greater than or equal to 0"))
    return errors


def _admission_errors(workload: Reviewed, old: Reviewed | None, counts: Mapping[str, int]) -> list[FieldError]:
    admission = workload.mapping("status").get("admission")
    if admission is None:
        # One that already reserved quota without an admission may still be updated so it can converge.
        if old is not None and reserves_quota(old) and old.mapping("status").get("admission") is None:
            return []
        return [required("status.admission", "must be set while the QuotaReserved condition is True")]
    if not isinstance(admission, dict):
        return [invalid("status.admission", admission, "must be an object")]
    errors: list[FieldError] = []
    assignments = admission.get("podSetAssignments") or []
    if not isinstance(assignments, list):
        return [invalid("status.admission.podSetAssignments", assignments, "must be a list")]
    if len(assignments) != len(counts):
        errors.append(
            invalid(
                "status.admission.podSetAssignments",
                len(assignments),
                f"must have one assignment per pod set ({len(counts)})",
            )
        )
    for i, psa in enumerate(assignments):
        path = index("status.admission.podSetAssignments", i)
        if not isinstance(psa, dict):
            errors.append(invalid(path, psa, "must be an object"))
            continue
        name = psa.get("name")
        if name not in counts:
            errors.append(FieldError(child(path, "name"), "Not found", "no pod set has this name", name, True))
        count = psa.get("count")
        usage = psa.get("resourceUsage")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0 and isinstance(usage, dict):
            for resource, raw in usage.items():
                value = quantity.parse(raw)
                scale = 1000 if resource == "cpu" else 1
                if value is not None and math.ceil(value * scale) % count != 0:
                    errors.append(
                        invalid(key(child(path, "resourceUsage"), resource), raw, f"is not a multiple of {count}")
                    )
    return errors


def _condition_errors(workload: Reviewed) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(workload.sequence("status", "conditions")):
        path = index("status.conditions", i)
        if not isinstance(cond, dict):
            errors.append(invalid(path, cond, "must be a condition object"))
            continue
        ctype, status, reason = cond.get("type"), cond.get("status"), cond.get("reason")
        if not isinstance(ctype, str) or (problem := names.qualified_name(ctype)):
            errors.append(invalid(child(path, "type"), ctype, problem or "must be a string"))
        elif ctype in seen:
            errors.append(invalid(child(path, "type"), ctype, "each condition type may appear only once"))
        seen.add(str(ctype))
        if status not in CONDITION_STATUSES:
            errors.append(invalid(child(path, "status"), status, "must be True, False or Unknown"))
        if not isinstance(reason, str) or not reason:
            errors.append(required(child(path, "reason"), "a CamelCase reason is required"))
        elif problem := names.condition_reason(reason):
            errors.append(invalid(child(path, "reason"), reason, problem))
        message = cond.get("message", "")
        if not isinstance(message, str) or len(message) > 32768:
            errors.append(invalid(child(path, "message"), "<long text>", "must be at most 32768 characters"))
    return errors


def _reclaimable_errors(workload: Reviewed, counts: Mapping[str, int]) -> list[FieldError]:
    errors: list[FieldError] = []
    for entry in workload.dicts("status", "reclaimablePods"):
        name, count = entry.raw.get("name"), entry.raw.get("count", 0)
        path = key("status.reclaimablePods", str(name))
        if name not in counts:
            errors.append(invalid(child(path, "name"), name, f"must be one of the pod sets: {sorted(counts)}"))
        elif isinstance(count, int) and count > counts[str(name)]:
            errors.append(invalid(child(path, "count"), count, f"should be less or equal to {counts[str(name)]}"))
    return errors


def _reclaimable(workload: Reviewed) -> dict[str, int]:
    return {
        str(e.raw.get("name")): int(e.raw.get("count", 0))
        for e in workload.dicts("status", "reclaimablePods")
        if isinstance(e.raw.get("count", 0), int)
    }


def _without_topology(admission: object) -> object:
    """Admission minus the topology fields the scheduler may fill in after admitting."""
    if not isinstance(admission, dict):
        return admission
    assignments = admission.get("podSetAssignments")
    if not isinstance(assignments, list):
        return admission
    trimmed = [
        {k: v for k, v in psa.items() if k not in ("topologyAssignment", "delayedTopologyRequest")}
        if isinstance(psa, dict)
        else psa
        for psa in assignments
    ]
    return {**admission, "podSetAssignments": trimmed}


def update_errors(new: Reviewed, old: Reviewed) -> list[FieldError]:
    errors: list[FieldError] = []
    reserved_before, reserved_after = reserves_quota(old), reserves_quota(new)
    new_spec, old_spec = new.mapping("spec"), old.mapping("spec")
    # 1. Quota was computed from the pod sets and the queue: both fixed while it is reserved.
    if reserved_before and new_spec.get("podSets") != old_spec.get("podSets"):
        errors.append(immutable("spec.podSets", "cannot change while the Workload has quota reserved"))
    if reserved_before and reserved_after and new_spec.get("queueName") != old_spec.get("queueName"):
        errors.append(immutable("spec.queueName", "cannot change while the Workload has quota reserved"))
    if reserved_before and reserved_after:
        errors += _priority_class_errors(new, old)
        before, after = _reclaimable(old), _reclaimable(new)
        for name, count in before.items():
            if name not in after:
                errors.append(required(key("status.reclaimablePods", name), "cannot be removed"))
            elif after[name] < count:
                errors.append(
                    invalid(
                        child(key("status.reclaimablePods", name), "count"), after[name], f"cannot be less than {count}"
                    )
                )
    # 2. An admission can be set or cleared, never edited in place.
    old_status, new_status = old.mapping("status"), new.mapping("status")
    new_adm, old_adm = new_status.get("admission"), old_status.get("admission")
    if new_adm is not None and old_adm is not None and _without_topology(new_adm) != _without_topology(old_adm):
        errors.append(immutable("status.admission", "can be set or cleared, but not changed; clear it first"))
    # 3. The execution-time limit is fixed while admitted.
    admitted = has_condition(old, c.COND_ADMITTED) and has_condition(new, c.COND_ADMITTED)
    max_exec = "maximumExecutionTimeSeconds"
    if admitted and new_spec.get(max_exec) != old_spec.get(max_exec):
        errors.append(immutable("spec.maximumExecutionTimeSeconds", "cannot change while the Workload is admitted"))
    # 4. A cluster is picked among the nominated ones.
    cluster = new_status.get("clusterName")
    if old_status.get("clusterName") is None and cluster is not None:
        nominated = old_status.get("nominatedClusterNames") or []
        if cluster not in nominated:
            errors.append(invalid("status.clusterName", cluster, "must be one of the nominatedClusterNames"))
    elif cluster is not None and cluster != old_status.get("clusterName"):
        errors.append(forbidden("status.clusterName", "cannot change once set"))
    return errors


def _priority_class_errors(new: Reviewed, old: Reviewed) -> list[FieldError]:
    """While quota is reserved the kind of priority class is fixed; the name of a WorkloadPriorityClass may change
    (the job's priority-class label moved), that of a pod PriorityClass may not. v1beta2 says it with
    ``priorityClassRef`` (group, kind, name), v1beta1 with ``priorityClassSource`` and ``priorityClassName``."""
    new_spec, old_spec = new.mapping("spec"), old.mapping("spec")
    new_ref, old_ref = new_spec.get("priorityClassRef"), old_spec.get("priorityClassRef")
    if isinstance(new_ref, Mapping) or isinstance(old_ref, Mapping):
        new_ref, old_ref = new_ref or {}, old_ref or {}
        kind_of = ("group", "kind")
        if bool(new_ref) != bool(old_ref) or any(new_ref.get(f) != old_ref.get(f) for f in kind_of):
            return [immutable("spec.priorityClassRef", "its kind cannot change while the Workload has quota reserved")]
        if new_ref.get("group") == "scheduling.k8s.io" and new_ref.get("name") != old_ref.get("name"):
            return [
                immutable("spec.priorityClassRef.name", "a pod PriorityClass cannot change while quota is reserved")
            ]
        return []
    if new_spec.get("priorityClassSource") != old_spec.get("priorityClassSource"):
        return [immutable("spec.priorityClassSource", "cannot change while the Workload has quota reserved")]
    if new_spec.get("priorityClassSource") == c.POD_PRIORITY_CLASS_SOURCE and new_spec.get(
        "priorityClassName"
    ) != old_spec.get("priorityClassName"):
        return [immutable("spec.priorityClassName", "a pod PriorityClass cannot change while quota is reserved")]
    return []
