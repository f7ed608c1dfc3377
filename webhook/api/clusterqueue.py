"""ClusterQueue: quota per flavor and resource, cohort membership, and the queue's policies.

Owns: the ``ClusterQueue`` value type and its parser from either API version (``cohort`` in v1beta1,
``cohortName`` in v1beta2; the v1beta1 fungibility aliases ``Borrow``/``Preempt`` normalised away).
Must not: account usage or decide admission; ``webhook.core`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from webhook.api import wire
from webhook.api.quantity import Quantity, parse_quantity
from webhook.api.selector import LabelSelector, parse_label_selector

STRICT_FIFO: Final = "StrictFIFO"
BEST_EFFORT_FIFO: Final = "BestEffortFIFO"

# Flavor fungibility policies.
MAY_STOP_SEARCH: Final = "MayStopSearch"
TRY_NEXT_FLAVOR: Final = "TryNextFlavor"
BORROWING_OVER_PREEMPTION: Final = "BorrowingOverPreemption"
PREEMPTION_OVER_BORROWING: Final = "PreemptionOverBorrowing"

# Preemption policies.
NEVER: Final = "Never"
LOWER_PRIORITY: Final = "LowerPriority"
LOWER_OR_NEWER_EQUAL_PRIORITY: Final = "LowerOrNewerEqualPriority"
ANY: Final = "Any"

STOP_NONE: Final = "None"
STOP_HOLD: Final = "Hold"
STOP_HOLD_AND_DRAIN: Final = "HoldAndDrain"

DEFAULT_WEIGHT: Final = Fraction(1)

# v1beta1 deprecated spellings, converted by Kueue to MayStopSearch.
_FUNGIBILITY_ALIASES: Final = {"Borrow": MAY_STOP_SEARCH, "Preempt": MAY_STOP_SEARCH}


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    name: str
    nominal: Quantity
    borrowing_limit: Quantity | None = None  # None: unlimited
    lending_limit: Quantity | None = None  # None: all of nominal may be lent


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str = BORROWING_OVER_PREEMPTION


@dataclass(frozen=True, slots=True)
class Preemption:
    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    borrow_max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    queueing_strategy: str = BEST_EFFORT_FIFO
    namespace_selector: LabelSelector | None = None  # None: no namespace may use the queue
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    preemption: Preemption = Preemption()
    stop_policy: str = STOP_NONE
    terminating: bool = False  # deleted, held by its finalizer while admitted workloads remain: admits nothing
    weight: Fraction = DEFAULT_WEIGHT  # spec.fairSharing.weight, exact
    admission_mode: str = ""  # spec.admissionScope.admissionMode; "" when unset

    @property
    def active(self) -> bool:
        return self.stop_policy == STOP_NONE and not self.terminating


def parse_weight(spec: Mapping[str, Any], path: str) -> Fraction:
    """``fairSharing.weight`` of a ClusterQueue or Cohort spec as an exact fraction (default 1); never negative."""
    raw = wire.mapping(spec.get("fairSharing"), f"{path}.fairSharing").get("weight")
    if raw is None:
        return DEFAULT_WEIGHT
    weight = Fraction(parse_quantity(raw).nano, 10**9)
    if weight < 0:
        raise wire.InvalidObject(f"{path}.fairSharing.weight", "must not be negative")
    return weight


def _optional_quantity(raw: object) -> Quantity | None:
    return None if raw is None else parse_quantity(raw)


def parse_resource_group(raw: object, path: str) -> ResourceGroup:
    """One ``resourceGroups`` entry (ClusterQueue and Cohort share the shape)."""
    obj = wire.mapping(raw, path)
    covered = tuple(wire.string(r, f"{path}.coveredResources") for r in wire.items(obj.get("coveredResources"), path))
    flavors = []
    for i, f in enumerate(wire.items(obj.get("flavors"), f"{path}.flavors")):
        fpath = f"{path}.flavors[{i}]"
        fobj = wire.mapping(f, fpath)
        quotas = []
        for j, r in enumerate(wire.items(fobj.get("resources"), f"{fpath}.resources")):
            rpath = f"{fpath}.resources[{j}]"
            robj = wire.mapping(r, rpath)
            if robj.get("nominalQuota") is None:
                raise wire.InvalidObject(f"{rpath}.nominalQuota", "required")
            quotas.append(
                ResourceQuota(
                    name=wire.string(robj.get("name"), f"{rpath}.name"),
                    nominal=parse_quantity(robj["nominalQuota"]),
                    borrowing_limit=_optional_quantity(robj.get("borrowingLimit")),
                    lending_limit=_optional_quantity(robj.get("lendingLimit")),
                )
            )
        flavors.append(FlavorQuotas(wire.string(fobj.get("name"), f"{fpath}.name"), tuple(quotas)))
    return ResourceGroup(covered, tuple(flavors))


def parse_cluster_queue(obj: Mapping[str, Any]) -> ClusterQueue:
    meta = wire.mapping(obj.get("metadata"), "metadata")
    spec = wire.mapping(obj.get("spec"), "spec")
    fung = wire.mapping(spec.get("flavorFungibility"), "spec.flavorFungibility")
    borrow = wire.string(fung.get("whenCanBorrow"), "spec.flavorFungibility.whenCanBorrow", default=MAY_STOP_SEARCH)
    preempt = wire.string(fung.get("whenCanPreempt"), "spec.flavorFungibility.whenCanPreempt", default=TRY_NEXT_FLAVOR)
    policies = (MAY_STOP_SEARCH, TRY_NEXT_FLAVOR)
    pre = wire.mapping(spec.get("preemption"), "spec.preemption")
    bwc = wire.mapping(pre.get("borrowWithinCohort"), "spec.preemption.borrowWithinCohort")
    selector = spec.get("namespaceSelector")
    return ClusterQueue(
        name=wire.string(meta.get("name"), "metadata.name"),
        resource_groups=tuple(
            parse_resource_group(g, f"spec.resourceGroups[{i}]")
            for i, g in enumerate(wire.items(spec.get("resourceGroups"), "spec.resourceGroups"))
        ),
        cohort=wire.optional_string(wire.first_present(spec, "cohortName", "cohort"), "spec.cohort"),
        queueing_strategy=wire.one_of(
            spec.get("queueingStrategy"),
            "spec.queueingStrategy",
            (STRICT_FIFO, BEST_EFFORT_FIFO),
            default=BEST_EFFORT_FIFO,
        ),
        namespace_selector=None if selector is None else parse_label_selector(selector, "spec.namespaceSelector"),
        flavor_fungibility=FlavorFungibility(
            when_can_borrow=wire.one_of(
                _FUNGIBILITY_ALIASES.get(borrow, borrow), "spec.flavorFungibility.whenCanBorrow", policies
            ),
            when_can_preempt=wire.one_of(
                _FUNGIBILITY_ALIASES.get(preempt, preempt), "spec.flavorFungibility.whenCanPreempt", policies
            ),
            preference=wire.one_of(
                fung.get("preference"),
                "spec.flavorFungibility.preference",
                (BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING),
                default=BORROWING_OVER_PREEMPTION,
            ),
        ),
        preemption=Preemption(
            within_cluster_queue=wire.one_of(
                pre.get("withinClusterQueue"),
                "spec.preemption.withinClusterQueue",
                (NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL_PRIORITY),
                default=NEVER,
            ),
            reclaim_within_cohort=wire.one_of(
                pre.get("reclaimWithinCohort"),
                "spec.preemption.reclaimWithinCohort",
                (NEVER, LOWER_PRIORITY, ANY),
                default=NEVER,
            ),
            borrow_within_cohort=wire.one_of(
                bwc.get("policy"), "spec.preemption.borrowWithinCohort.policy", (NEVER, LOWER_PRIORITY), default=NEVER
            ),
            borrow_max_priority_threshold=wire.optional_integer(
                bwc.get("maxPriorityThreshold"), "spec.preemption.borrowWithinCohort.maxPriorityThreshold"
            ),
        ),
        stop_policy=wire.one_of(
            spec.get("stopPolicy"), "spec.stopPolicy", (STOP_NONE, STOP_HOLD, STOP_HOLD_AND_DRAIN), default=STOP_NONE
        ),
        terminating=meta.get("deletionTimestamp") is not None,
        weight=parse_weight(spec, "spec"),
        admission_mode=wire.string(
            wire.mapping(spec.get("admissionScope"), "spec.admissionScope").get("admissionMode"),
            "spec.admissionScope.admissionMode",
            default="",
        ),
    )
