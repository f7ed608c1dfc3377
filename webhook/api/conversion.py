"""Converting Turnstile's queue objects between ``kueue.x-k8s.io/v1beta1`` and ``v1beta2``, as Kueue does.

Owns: ``convert`` (one object to a desired apiVersion), ``ConversionError`` and the per-kind rules:

* ClusterQueue: ``spec.cohort`` <-> ``spec.cohortName``; a non-empty v1beta1 ``spec.admissionChecks`` list replaces
  ``spec.admissionChecksStrategy`` with one rule per check (an empty list is ignored); the v1beta1 fungibility
  values ``Borrow`` and ``Preempt`` become ``MayStopSearch`` (the way back passes values through). Dropped on the
  way to v1beta2: ``status.pendingWorkloadsStatus``, ``status.fairSharing.admissionFairSharingStatus``; on the way
  to v1beta1: ``spec.concurrentAdmissionPolicy``.
* LocalQueue: ``status.flavorUsage`` <-> ``status.flavorsUsage``; v1beta1's deprecated ``status.flavors`` is dropped.
* Workload: ``spec.priorityClassSource`` + ``spec.priorityClassName`` <-> ``spec.priorityClassRef`` (only the two
  known sources map; any other source, ``""`` included, yields no reference and the name is lost, as in Kueue);
  ``status.accumulatedPastExexcutionTimeSeconds`` (Kueue's v1beta1 spelling) <-> ``...ExecutionTimeSeconds``;
  ``topologyAssignment`` domains <-> slices (``webhook.api.topology``). Dropped on the way to v1beta1:
  ``spec.preemptionGates``, ``status.preemptionGates``, ``podSets[].topologyRequest.podsetSliceRequiredTopology
  Constraints``.
* Cohort: v1beta1's ``status.fairSharing.admissionFairSharingStatus`` is dropped on the way to v1beta2.
* ResourceFlavor, WorkloadPriorityClass: same schema in both versions; only ``apiVersion`` changes.

Every other field is copied as it is. Nothing is stashed for a lossless round trip, as in Kueue: what one version
cannot hold is gone after a trip through it. The input is never modified; unchanged sub-objects are shared with it.
Must not: do I/O, or validate what the target schema will check anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from webhook.api import constants as c
from webhook.api.topology import TopologyEncodingError, domains_to_slices, slices_to_domains

V1BETA1: Final = f"{c.GROUP}/v1beta1"
V1BETA2: Final = f"{c.GROUP}/v1beta2"
VERSIONS: Final = (V1BETA1, V1BETA2)

WPC_GROUP: Final = c.GROUP
WPC_KIND: Final = "WorkloadPriorityClass"
POD_PRIORITY_GROUP: Final = "scheduling.k8s.io"
POD_PRIORITY_KIND: Final = "PriorityClass"

_SOURCE_TO_REF: Final = {
    c.WORKLOAD_PRIORITY_CLASS_SOURCE: (WPC_GROUP, WPC_KIND),
    c.POD_PRIORITY_CLASS_SOURCE: (POD_PRIORITY_GROUP, POD_PRIORITY_KIND),
}
_REF_TO_SOURCE: Final = {ref: source for source, ref in _SOURCE_TO_REF.items()}

# v1beta1 fungibility aliases that v1beta2 no longer has, and what Kueue turns them into.
_FUNGIBILITY_ALIASES: Final = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}

Object = dict[str, Any]


class ConversionError(ValueError):
    """An object that cannot be converted: not one of our kinds or versions, or malformed where it must change."""


def convert(obj: Mapping[str, Any], desired_api_version: str) -> Object:
    """``obj`` (a v1beta1 or v1beta2 queue object) at ``desired_api_version``; a new dict, ``obj`` is untouched."""
    if desired_api_version not in VERSIONS:
        raise ConversionError(f"cannot convert to {desired_api_version!r}: expected one of {', '.join(VERSIONS)}")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version not in VERSIONS:
        raise ConversionError(f"cannot convert from apiVersion {api_version!r}: expected one of {', '.join(VERSIONS)}")
    rules = _RULES.get(kind) if isinstance(kind, str) else None
    if rules is None:
        raise ConversionError(f"cannot convert kind {kind!r}: expected one of {', '.join(sorted(_RULES))}")
    out = dict(obj)
    if api_version != desired_api_version:
        to_v1beta2, to_v1beta1 = rules
        try:
            out = to_v1beta2(out) if desired_api_version == V1BETA2 else to_v1beta1(out)
        except TopologyEncodingError as exc:
            raise ConversionError(f"{kind} {_name(obj)}: topologyAssignment: {exc}") from exc
        except (AttributeError, TypeError) as exc:  # a list where an object belongs, and the like
            raise ConversionError(f"{kind} {_name(obj)} is malformed: {exc}") from exc
    out["apiVersion"] = desired_api_version
    return out


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    return f"{namespace}/{name}" if namespace else str(name)


def _part(obj: Object, key: str) -> Object | None:
    """A shallow copy of ``obj[key]`` put back into ``obj`` (so it can be changed), or None when absent."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConversionError(f"{key} must be an object, got {type(value).__name__}")
    copied = dict(value)
    obj[key] = copied
    return copied


def _rename(obj: Object, old: str, new: str) -> None:
    if old in obj:
        value = obj.pop(old)
        if value is not None:
            obj[new] = value


# ---------------------------------------------------------------------------------------------- identical kinds


def _same(obj: Object) -> Object:
    return obj


# ---------------------------------------------------------------------------------------------- ClusterQueue


def _cluster_queue_to_v1beta2(obj: Object) -> Object:
    if (spec := _part(obj, "spec")) is not None:
        cohort = spec.pop("cohort", None)
        if cohort:
            spec["cohortName"] = cohort
        checks = spec.pop("admissionChecks", None)
        if checks:  # replaces any strategy sent alongside; an empty list leaves it alone (Kueue)
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
        if (fungibility := _part(spec, "flavorFungibility")) is not None:
            for field, alias in _FUNGIBILITY_ALIASES.items():
                if fungibility.get(field) == alias:
                    fungibility[field] = "MayStopSearch"
    if (status := _part(obj, "status")) is not None:
        status.pop("pendingWorkloadsStatus", None)
        if (fair := _part(status, "fairSharing")) is not None:
            fair.pop("admissionFairSharingStatus", None)
    return obj


def _cluster_queue_to_v1beta1(obj: Object) -> Object:
    if (spec := _part(obj, "spec")) is not None:
        cohort = spec.pop("cohortName", None)
        if cohort:
            spec["cohort"] = cohort
        spec.pop("concurrentAdmissionPolicy", None)
    return obj


# ---------------------------------------------------------------------------------------------- Cohort


def _cohort_to_v1beta2(obj: Object) -> Object:
    if (status := _part(obj, "status")) is not None and (fair := _part(status, "fairSharing")) is not None:
        fair.pop("admissionFairSharingStatus", None)
    return obj


# ---------------------------------------------------------------------------------------------- LocalQueue


def _local_queue_to_v1beta2(obj: Object) -> Object:
    if (status := _part(obj, "status")) is not None:
        _rename(status, "flavorUsage", "flavorsUsage")
        status.pop("flavors", None)
    return obj


def _local_queue_to_v1beta1(obj: Object) -> Object:
    if (status := _part(obj, "status")) is not None:
        _rename(status, "flavorsUsage", "flavorUsage")
    return obj


# ---------------------------------------------------------------------------------------------- Workload


def _workload_to_v1beta2(obj: Object) -> Object:
    if (spec := _part(obj, "spec")) is not None:
        source = spec.pop("priorityClassSource", None)
        name = spec.pop("priorityClassName", None)
        ref = _SOURCE_TO_REF.get(source) if isinstance(source, str) else None
        if ref is not None:
            spec["priorityClassRef"] = {"group": ref[0], "kind": ref[1], "name": name or ""}
    if (status := _part(obj, "status")) is not None:
        _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
        _map_topology(status, domains_to_slices, "domains")
    return obj


def _workload_to_v1beta1(obj: Object) -> Object:
    if (spec := _part(obj, "spec")) is not None:
        ref = spec.pop("priorityClassRef", None)
        if isinstance(ref, Mapping):
            source = _REF_TO_SOURCE.get((str(ref.get("group")), str(ref.get("kind"))))
            if source is not None:
                spec["priorityClassSource"] = source
                spec["priorityClassName"] = ref.get("name") or ""
        spec.pop("preemptionGates", None)
        pod_sets = spec.get("podSets")
        if isinstance(pod_sets, list) and any(_has_slice_constraints(p) for p in pod_sets):
            spec["podSets"] = [_without_slice_constraints(p) for p in pod_sets]
    if (status := _part(obj, "status")) is not None:
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
        status.pop("preemptionGates", None)
        _map_topology(status, slices_to_domains, "slices")
    return obj


def _has_slice_constraints(pod_set: object) -> bool:
    request = pod_set.get("topologyRequest") if isinstance(pod_set, Mapping) else None
    return isinstance(request, Mapping) and "podsetSliceRequiredTopologyConstraints" in request


def _without_slice_constraints(pod_set: Any) -> Any:
    if not _has_slice_constraints(pod_set):
        return pod_set
    request = {k: v for k, v in pod_set["topologyRequest"].items() if k != "podsetSliceRequiredTopologyConstraints"}
    return {**pod_set, "topologyRequest": request}


def _map_topology(status: Object, recode: Callable[[Mapping[str, Any]], Object], source_key: str) -> None:
    """Re-encodes every podSetAssignment's topologyAssignment that is in the source encoding."""
    admission = status.get("admission")
    if not isinstance(admission, Mapping):
        return
    assignments = admission.get("podSetAssignments")
    if not isinstance(assignments, list):
        return
    if not any(isinstance(a, Mapping) and isinstance(a.get("topologyAssignment"), Mapping) for a in assignments):
        return
    recoded = []
    for assignment in assignments:
        topology = assignment.get("topologyAssignment") if isinstance(assignment, Mapping) else None
        if isinstance(topology, Mapping) and (source_key in topology or "levels" in topology):
            assignment = {**assignment, "topologyAssignment": recode(topology)}
        recoded.append(assignment)
    status["admission"] = {**admission, "podSetAssignments": recoded}


_Rule = Callable[[Object], Object]
_RULES: Final[Mapping[str, tuple[_Rule, _Rule]]] = {
    "ClusterQueue": (_cluster_queue_to_v1beta2, _cluster_queue_to_v1beta1),
    "LocalQueue": (_local_queue_to_v1beta2, _local_queue_to_v1beta1),
    "Workload": (_workload_to_v1beta2, _workload_to_v1beta1),
    "Cohort": (_cohort_to_v1beta2, _same),
    "ResourceFlavor": (_same, _same),
    "WorkloadPriorityClass": (_same, _same),
}
