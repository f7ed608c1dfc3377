"""Flavor assignment: for each pod set and resource, which flavor of the ClusterQueue it takes, all at once.

Owns: ``FlavorAssigner`` (one per ClusterQueue per pass) and ``Assignment``. Flavors are tried in the queue's
order per resource group; ``flavorFungibility`` decides whether to stop at a flavor that needs borrowing or
preemption; pod sets of one workload accumulate in the same flavors, so a workload fits only if *all* of its
pods fit together.
Must not: change usage (it only reads ``QueueQuota``), pick preemption victims, or format messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from webhook.api.clusterqueue import (
    BORROWING_OVER_PREEMPTION,
    MAY_STOP_SEARCH,
    ClusterQueue,
)
from webhook.api.flavor import ResourceFlavor
from webhook.core.demand import Demand, PodSetDemand
from webhook.core.quota import FlavorResource, QueueQuota

# Modes, ordered so that a larger number is a better outcome (as Kueue ranks them).
NO_FIT: Final = 0  # more than the queue could ever hold: waiting cannot help
WAIT: Final = 1  # fits the queue's limits, but the quota is in use and nothing may be preempted for it
PREEMPT: Final = 2  # fits the queue's limits if some admitted workloads are preempted
FIT: Final = 3
NO_FLAVOR: Final = -1  # no flavor is eligible at all (resource not covered, taints, node selector)

PODS: Final = "pods"  # when a queue covers "pods", each pod counts one, as in Kueue


@dataclass(frozen=True, slots=True)
class Attempt:
    """One flavor tried for one resource of one pod set: the numbers a pending reason is made of."""

    pod_set: str
    flavor: str
    resource: str
    mode: int
    needed: int = 0
    available: int = 0
    potential: int = 0
    nominal: int = 0
    used: int = 0
    cohort_free: int = 0
    note: str = ""  # why the flavor was not eligible


@dataclass(slots=True)
class Assignment:
    mode: int
    borrowing: bool
    counts: tuple[int, ...]
    flavors: tuple[dict[str, str], ...]  # per pod set: resource -> flavor
    usage: dict[FlavorResource, int]  # total over the workload, per (flavor, resource)
    short: frozenset[FlavorResource] = frozenset()  # where the quota is short (preemption would have to free it)
    attempts: list[Attempt] = field(default_factory=list)  # filled only when explaining
    # Kueue's borrowing level: 0 without borrowing, else the height of the lowest cohort whose subtree holds the
    # workload (see ``QueueQuota.borrowing_level``), the highest over the resources; Kueue orders heads by it.
    level: int = 0


# A tried flavor: (mode, borrowing level, flavor name, where the quota is short).
_Choice = tuple[int, int, str, list[FlavorResource]]


class FlavorAssigner:
    def __init__(self, cq: ClusterQueue, quota: QueueQuota, flavors: Mapping[str, ResourceFlavor]) -> None:
        self.cq = cq
        self.quota = quota
        self.flavors = flavors
        # Set by the scheduler: whether any admitted workload could at all be a victim for this queue.
        self.preemption_possible = False
        self._group_of: dict[str, int] = {}
        self._group_flavors: list[tuple[str, ...]] = []
        for i, group in enumerate(cq.resource_groups):
            for r in group.covered_resources:
                self._group_of[r] = i
            self._group_flavors.append(tuple(f.name for f in group.flavors))
        self._counts_pods = PODS in self._group_of
        self._borrow_stops = cq.flavor_fungibility.when_can_borrow == MAY_STOP_SEARCH
        self._preempt_stops = cq.flavor_fungibility.when_can_preempt == MAY_STOP_SEARCH
        self._mode_first = cq.flavor_fungibility.preference == BORROWING_OVER_PREEMPTION

    def assign(self, demand: Demand, counts: tuple[int, ...], *, explain: bool = False) -> Assignment:
        usage: dict[FlavorResource, int] = {}
        chosen: list[dict[str, str]] = []
        attempts: list[Attempt] = []
        record = attempts if explain else None
        short: set[FlavorResource] = set()
        worst = FIT
        level = 0
        for pod_set, count in zip(demand.pod_sets, counts, strict=True):
            # 1. This pod set's totals, grouped by the resource group that covers each resource.
            by_group, covered = self._by_group(pod_set, count, record)
            if not covered:
                worst = NO_FLAVOR
                if not explain:
                    return Assignment(NO_FLAVOR, False, counts, (), {})
            flavors_of_set: dict[str, str] = {}
            for g, wanted in by_group.items():
                # 2. Per group, walk the flavors in the queue's order until fungibility says stop.
                best = self._pick_flavor(pod_set, self._group_flavors[g], wanted, usage, record)
                # 3. Commit the group's choice inside this workload, so later pod sets see it.
                if best is None:
                    mode_g = NO_FLAVOR
                else:
                    mode_g, borrow_g, name, lacking = best
                    if mode_g == FIT and borrow_g > level:
                        level = borrow_g
                    short.update(lacking)
                    for resource, amount in wanted:
                        flavors_of_set[resource] = name
                        fr = (name, resource)
                        usage[fr] = usage.get(fr, 0) + amount
                if mode_g < worst:
                    worst = mode_g
                    if worst <= WAIT and not explain:
                        return Assignment(worst, False, counts, (), {})
            chosen.append(flavors_of_set)
        return Assignment(worst, level > 0, counts, tuple(chosen), usage, frozenset(short), attempts, level)

    def _by_group(
        self, pod_set: PodSetDemand, count: int, record: list[Attempt] | None
    ) -> tuple[dict[int, list[tuple[str, int]]], bool]:
        """The pod set's totals per covering resource group, and whether every resource is covered at all."""
        by_group: dict[int, list[tuple[str, int]]] = {}
        covered = True
        for resource, nano in pod_set.per_pod:
            g = self._group_of.get(resource)
            if g is None:
                covered = False
                if record is None:
                    return by_group, False
                record.append(Attempt(pod_set.name, "", resource, NO_FLAVOR, note="not covered"))
                continue
            by_group.setdefault(g, []).append((resource, nano * count))
        if self._counts_pods and count:
            by_group.setdefault(self._group_of[PODS], []).append((PODS, count * 10**9))
        return by_group, covered

    def _pick_flavor(
        self,
        pod_set: PodSetDemand,
        names: tuple[str, ...],
        wanted: list[tuple[str, int]],
        usage: Mapping[FlavorResource, int],
        record: list[Attempt] | None,
    ) -> _Choice | None:
        """The best flavor of one group for ``wanted`` (the flavors tried in order); None when none admits the pods."""
        best: _Choice | None = None
        for name in names:
            flavor = self.flavors[name]
            why = (
                flavor.admits(dict(pod_set.node_selector), pod_set.tolerations)
                if (pod_set.node_selector or pod_set.tolerations or flavor.node_taints)
                else None
            )
            if why is not None:
                if record is not None:
                    record.append(Attempt(pod_set.name, name, wanted[0][0], NO_FLAVOR, note=why))
                continue
            mode, borrow, lacking = self._fit(pod_set.name, name, wanted, usage, record)
            candidate = (mode, borrow, name, lacking)
            if best is None or self._better(candidate, best):
                best = candidate
            if mode == FIT and (not borrow or self._borrow_stops):
                break
            if mode == PREEMPT and self._preempt_stops:
                break
        return best

    def _fit(
        self,
        pod_set_name: str,
        name: str,
        wanted: list[tuple[str, int]],
        usage: Mapping[FlavorResource, int],
        record: list[Attempt] | None,
    ) -> tuple[int, int, list[FlavorResource]]:
        """How ``wanted`` fits in flavor ``name``: the worst mode over its resources, the borrowing level, and
        where the quota is short."""
        quota = self.quota
        mode, borrow, lacking = FIT, 0, []
        for resource, amount in wanted:
            fr = (name, resource)
            val = usage.get(fr, 0) + amount
            if val <= quota.available(fr):
                m = FIT
                if quota.usage.get(fr, 0) + val > quota.nominal.get(fr, 0):
                    borrow = max(borrow, quota.borrowing_level(fr, val))
            elif val <= quota.potential(fr):
                m = PREEMPT if self.preemption_possible else WAIT
                lacking.append(fr)
            else:
                m = NO_FIT
            if m < mode:
                mode = m
            if record is not None:
                record.append(self._attempt(pod_set_name, fr, m, val))
        return mode, borrow, lacking

    def _better(self, a: _Choice, b: _Choice) -> bool:
        """Kueue's preference between two tried flavors (a lower borrowing level is better, as in its
        ``granularMode``); a flavor that can never work is never preferred."""
        (mode_a, borrow_a, _, _), (mode_b, borrow_b, _, _) = a, b
        if (mode_a >= PREEMPT) != (mode_b >= PREEMPT):
            return mode_a >= PREEMPT
        if self._mode_first:
            return (mode_a, -borrow_a) > (mode_b, -borrow_b)
        return (-borrow_a, mode_a) > (-borrow_b, mode_b)

    def _attempt(self, pod_set: str, fr: FlavorResource, mode: int, val: int) -> Attempt:
        q = self.quota
        return Attempt(
            pod_set,
            fr[0],
            fr[1],
            mode,
            needed=val,
            available=max(0, q.available(fr)),
            potential=q.potential(fr),
            nominal=q.nominal.get(fr, 0),
            used=q.usage.get(fr, 0),
            cohort_free=q.lendable_by_cohort(fr),
        )
