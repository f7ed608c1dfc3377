"""Workload: the unit Turnstile queues and admits, and its ``status.admission``.

Owns: ``Workload``, ``PodSet``, ``Admission``, ``PodSetAssignment``, ``Condition`` and the parser from either
API version (v1beta1 ``priorityClassName``/``priorityClassSource``, v1beta2 ``priorityClassRef``).
Per-pod requests are computed once here, at the boundary, so the scheduler only sees numbers.
Must not: decide anything about quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from webhook.api import constants, model, wire
from webhook.api.flavor import Toleration, parse_tolerations
from webhook.api.quantity import Quantity
from webhook.api.resources import parse_resource_list, pod_requests

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

# v1beta2 priorityClassRef groups, mapped to the v1beta1 priorityClassSource values we keep internally.
_SOURCE_BY_GROUP: Final = {
    constants.GROUP: constants.WORKLOAD_PRIORITY_CLASS_SOURCE,
    "scheduling.k8s.io": constants.POD_PRIORITY_CLASS_SOURCE,
}


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    count: int
    requests: Mapping[str, Quantity]  # per pod
    min_count: int | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    flavors: Mapping[str, str]  # resource -> flavor
    resource_usage: Mapping[str, Quantity]  # total for `count` pods
    count: int


@dataclass(frozen=True, slots=True)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class PriorityClassRef:
    source: str  # constants.WORKLOAD_PRIORITY_CLASS_SOURCE or POD_PRIORITY_CLASS_SOURCE
    name: str


def priority_class_ref_wire(source: str, name: str) -> dict[str, str]:
    """The v1beta2 ``spec.priorityClassRef`` for a class named ``name`` of ``source`` (one of the two sources)."""
    kind = {
        constants.WORKLOAD_PRIORITY_CLASS_SOURCE: "WorkloadPriorityClass",
        constants.POD_PRIORITY_CLASS_SOURCE: "PriorityClass",
    }
    if source not in kind:
        raise ValueError(f"unknown priority class source {source!r}")
    group = next(g for g, s in _SOURCE_BY_GROUP.items() if s == source)
    return {"group": group, "kind": kind[source], "name": name}


@dataclass(frozen=True, slots=True)
class Workload:
    namespace: str
    name: str
    pod_sets: tuple[PodSet, ...]
    queue_name: str = ""
    uid: str = ""
    created: datetime = EPOCH
    priority: int = 0
    priority_class: PriorityClassRef | None = None
    active: bool = True
    admission: Admission | None = None
    conditions: tuple[Condition, ...] = ()
    requeue_at: datetime | None = None
    # Derived once from the fields above (``dataclasses.replace`` derives them again): every scheduling pass asks
    # them of each Workload of the snapshot, which the Admitter keeps from pass to pass; computing them at each
    # read (walking the conditions, building the order tuple) was a tenth of the reconciler's CPU in the baseline
    # benchmark's profile at scale 0.5.
    finished: bool = field(init=False, repr=False, compare=False)
    holds_quota: bool = field(init=False, repr=False, compare=False)
    pending: bool = field(init=False, repr=False, compare=False)
    queue_order: model.QueueOrder = field(init=False, repr=False, compare=False)
    key: tuple[str, str] = field(init=False, repr=False, compare=False)  # (namespace, name)

    def __post_init__(self) -> None:
        finished = model.finished(self.conditions)
        # holds_quota: it counts against its ClusterQueue, an admission recorded and not finished. Deliberately
        # conservative: a workload being evicted keeps its ``status.admission`` (and its pods may still run) until
        # the reconciler clears it, so it keeps counting until then, whatever its conditions say.
        # pending: waiting for quota, active, not finished, no admission recorded.
        object.__setattr__(self, "finished", finished)
        object.__setattr__(
            self, "holds_quota", model.holds_quota(has_admission=self.admission is not None, conditions=self.conditions)
        )
        object.__setattr__(self, "pending", self.admission is None and self.active and not finished)
        order = model.queue_order(
            priority=self.priority, created=self.created, uid=self.uid, namespace=self.namespace, name=self.name
        )
        object.__setattr__(self, "queue_order", order)
        object.__setattr__(self, "key", (self.namespace, self.name))

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def condition_true(self, type_: str) -> bool:
        return model.condition_true(self.conditions, type_)

    @property
    def quota_reserved_at(self) -> datetime:
        c = self.condition(constants.COND_QUOTA_RESERVED)
        return c.last_transition_time if c is not None and c.last_transition_time is not None else self.created


def _parse_pod_set(raw: object, path: str) -> PodSet:
    obj = wire.mapping(raw, path)
    template = wire.mapping(obj.get("template"), f"{path}.template")
    spec = wire.mapping(template.get("spec"), f"{path}.template.spec")
    count = wire.integer(obj.get("count"), f"{path}.count", default=1)
    min_count = wire.optional_integer(obj.get("minCount"), f"{path}.minCount")
    if count < 0:
        raise wire.InvalidObject(f"{path}.count", f"must be >= 0, got {count}")
    if min_count is not None and not 1 <= min_count <= count:
        raise wire.InvalidObject(f"{path}.minCount", f"must be between 1 and count ({count}), got {min_count}")
    return PodSet(
        name=wire.string(obj.get("name"), f"{path}.name", default=constants.DEFAULT_PODSET_NAME),
        count=count,
        min_count=min_count,
        requests=pod_requests(spec),
        node_selector=wire.string_map(spec.get("nodeSelector"), f"{path}.template.spec.nodeSelector"),
        tolerations=parse_tolerations(spec.get("tolerations"), f"{path}.template.spec.tolerations"),
    )


def _parse_priority_class(spec: Mapping[str, Any]) -> PriorityClassRef | None:
    ref = spec.get("priorityClassRef")
    if ref is not None:  # v1beta2
        obj = wire.mapping(ref, "spec.priorityClassRef")
        group = wire.string(obj.get("group"), "spec.priorityClassRef.group")
        if group not in _SOURCE_BY_GROUP:
            raise wire.InvalidObject("spec.priorityClassRef.group", f"unknown group {group!r}")
        return PriorityClassRef(_SOURCE_BY_GROUP[group], wire.string(obj.get("name"), "spec.priorityClassRef.name"))
    name = wire.optional_string(spec.get("priorityClassName"), "spec.priorityClassName")
    if name is None:
        return None
    source = wire.string(spec.get("priorityClassSource"), "spec.priorityClassSource", default="")
    return PriorityClassRef(source, name)


def parse_admission(raw: object, path: str = "status.admission") -> Admission | None:
    if raw is None:
        return None
    obj = wire.mapping(raw, path)
    assignments = []
    for i, a in enumerate(wire.items(obj.get("podSetAssignments"), f"{path}.podSetAssignments")):
        apath = f"{path}.podSetAssignments[{i}]"
        aobj = wire.mapping(a, apath)
        assignments.append(
            PodSetAssignment(
                name=wire.string(aobj.get("name"), f"{apath}.name", default=constants.DEFAULT_PODSET_NAME),
                flavors=wire.string_map(aobj.get("flavors"), f"{apath}.flavors"),
                resource_usage=parse_resource_list(aobj.get("resourceUsage"), f"{apath}.resourceUsage"),
                count=wire.integer(aobj.get("count"), f"{apath}.count", default=0),
            )
        )
    return Admission(wire.string(obj.get("clusterQueue"), f"{path}.clusterQueue"), tuple(assignments))


def _parse_condition(raw: object, path: str) -> Condition:
    obj = wire.mapping(raw, path)
    return Condition(
        type=wire.string(obj.get("type"), f"{path}.type"),
        status=wire.string(obj.get("status"), f"{path}.status"),
        reason=wire.string(obj.get("reason"), f"{path}.reason", default=""),
        message=wire.string(obj.get("message"), f"{path}.message", default=""),
        last_transition_time=wire.optional_time(obj.get("lastTransitionTime"), f"{path}.lastTransitionTime"),
    )


def parse_workload(obj: Mapping[str, Any]) -> Workload:
    meta = wire.mapping(obj.get("metadata"), "metadata")
    spec = wire.mapping(obj.get("spec"), "spec")
    status = wire.mapping(obj.get("status"), "status")
    requeue = wire.mapping(status.get("requeueState"), "status.requeueState")
    pod_sets = tuple(
        _parse_pod_set(p, f"spec.podSets[{i}]") for i, p in enumerate(wire.items(spec.get("podSets"), "spec.podSets"))
    )
    if not pod_sets:
        raise wire.InvalidObject("spec.podSets", "at least one pod set is required")
    return Workload(
        namespace=wire.string(meta.get("namespace"), "metadata.namespace"),
        name=wire.string(meta.get("name"), "metadata.name"),
        uid=wire.string(meta.get("uid"), "metadata.uid", default=""),
        created=wire.optional_time(meta.get("creationTimestamp"), "metadata.creationTimestamp") or EPOCH,
        pod_sets=pod_sets,
        queue_name=wire.string(spec.get("queueName"), "spec.queueName", default=""),
        priority=wire.integer(spec.get("priority"), "spec.priority", default=0),
        priority_class=_parse_priority_class(spec),
        active=wire.boolean(spec.get("active"), "spec.active", default=True),
        admission=parse_admission(status.get("admission")),
        conditions=tuple(
            _parse_condition(c, f"status.conditions[{i}]")
            for i, c in enumerate(wire.items(status.get("conditions"), "status.conditions"))
        ),
        requeue_at=wire.optional_time(requeue.get("requeueAt"), "status.requeueState.requeueAt"),
    )
