"""Properties of the scheduler over random cohort trees: no level ever uses more than quota and limits allow.

The oracle recomputes, from the committed usage of the ClusterQueues alone, what each node of the tree draws
from its parent, and checks every node's borrowing limit and the root's total; it shares no code with the
incremental bookkeeping in ``webhook.core.quota``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.unit.core.builders import NOW, cluster_queue, cohort, group, quota, snapshot
from tests.unit.core.test_properties import UNIT, Cluster, _shuffled, check_decisions, operations, usage
from webhook.api.clusterqueue import ANY, LOWER_PRIORITY, NEVER, ClusterQueue, ResourceGroup
from webhook.api.cohort import Cohort
from webhook.core.fairsharing import FairSharing
from webhook.core.scheduler import schedule
from webhook.core.snapshot import Snapshot

FR = ("f0", "cpu")
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _limits(groups: tuple[ResourceGroup, ...]) -> tuple[int, int | None, int | None]:
    for g in groups:
        for f in g.flavors:
            for r in f.resources:
                borrowing = r.borrowing_limit.nano if r.borrowing_limit is not None else None
                lending = r.lending_limit.nano if r.lending_limit is not None else None
                return r.nominal.nano, borrowing, lending
    return 0, None, None


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[ClusterQueue], list[Cohort]]:
    def cpu(nominal: int, *, limits: bool) -> tuple[ResourceGroup, ...]:
        borrowing = draw(st.none() | st.integers(0, 6)) if limits else None
        lending = draw(st.none() | st.integers(0, 8)) if limits else None
        return (group(("f0", [quota("cpu", nominal, borrowing=borrowing, lending=lending)])),)

    cohorts = [cohort("org", *(cpu(draw(st.integers(0, 6)), limits=False) if draw(st.booleans()) else ()))]
    departments = [f"dept{i}" for i in range(draw(st.integers(1, 3)))]
    for name in departments:
        own = cpu(draw(st.integers(0, 4)), limits=True) if draw(st.booleans()) else ()
        cohorts.append(cohort(name, *own, parent="org"))
    cqs = []
    for i in range(draw(st.integers(2, 5))):
        parent = draw(st.sampled_from([*departments, "org", None]))
        nominal = draw(st.integers(0, 6))
        borrowing = draw(st.none() | st.integers(0, 6)) if parent else None
        lending = draw(st.none() | st.integers(0, nominal)) if parent else None
        reclaim = draw(st.sampled_from([ANY, LOWER_PRIORITY, NEVER]))
        cqs.append(
            cluster_queue(
                f"q{i}",
                group(("f0", [quota("cpu", nominal, borrowing=borrowing, lending=lending)])),
                cohort=parent,
                within=draw(st.sampled_from([LOWER_PRIORITY, NEVER])),
                reclaim=reclaim,
                borrow_within=draw(st.sampled_from([LOWER_PRIORITY, NEVER])) if reclaim != NEVER else NEVER,
            )
        )
    return cqs, cohorts


@dataclass
class TreeCluster(Cluster):
    cohorts: tuple[Cohort, ...] = ()

    def snapshot(self) -> Snapshot:
        return snapshot(self.cqs, list(self.workloads.values()), cohorts=list(self.cohorts))


def tree_respected(cqs: list[ClusterQueue], cohorts: list[Cohort], used: dict[str, int]) -> list[str]:
    """Every violated rule at every level of the tree (empty when all hold)."""
    children: dict[str, list[tuple[str, tuple[ResourceGroup, ...], bool]]] = {}
    for c in cohorts:
        if c.parent:
            children.setdefault(c.parent, []).append((c.name, c.resource_groups, False))
    for cq in cqs:
        if cq.cohort:
            children.setdefault(cq.cohort, []).append((cq.name, cq.resource_groups, True))
    broken: list[str] = []

    def visit(name: str, groups: tuple[ResourceGroup, ...], is_queue: bool, has_parent: bool) -> tuple[int, int, int]:
        """(capacity the node holds, what it draws from its parent, what it puts in its parent)."""
        nominal, borrowing, lending = _limits(groups)
        capacity, load = nominal, used.get(name, 0) if is_queue else 0
        for child, child_groups, child_is_queue in [] if is_queue else children.get(name, []):
            _, draws, puts = visit(child, child_groups, child_is_queue, True)
            capacity += puts
            load += draws
        kept = max(0, capacity - lending) if lending is not None and has_parent else 0
        if not has_parent and load > capacity:
            broken.append(f"root {name} uses {load}, holds {capacity}")
        if has_parent and borrowing is not None and load > capacity + borrowing:
            broken.append(f"{name} uses {load}, holds {capacity}, may borrow {borrowing}")
        return capacity, max(0, load - kept), capacity - kept

    visit("org", next(c for c in cohorts if c.name == "org").resource_groups, False, False)
    for cq in cqs:
        if cq.cohort is None:
            visit(cq.name, cq.resource_groups, True, False)
    return broken


@SETTINGS
@given(data=st.data(), fair=st.booleans())
def test_no_level_of_the_tree_exceeds_quota_and_results_are_deterministic(data: st.DataObject, fair: bool) -> None:
    """With fair sharing on or off: fair sharing changes the order and the victims, never what quota allows."""
    config = FairSharing(enabled=fair)
    cqs, cohorts = data.draw(trees())
    cluster = TreeCluster(cqs, cohorts=tuple(cohorts))
    shuffle = data.draw(st.randoms(use_true_random=False))
    for op in [*data.draw(operations(len(cqs))), ("pass",)]:
        if op[0] == "submit":
            cluster.submit(*op[1:])  # type: ignore[arg-type]
        elif op[0] == "finish":
            cluster.finish(op[1])  # type: ignore[arg-type]
        else:
            snap = cluster.snapshot()
            result = schedule(snap, now=NOW, fair_sharing=config)
            assert schedule(snap, now=NOW, fair_sharing=config) == result
            shuffled = replace(_shuffled(snap, shuffle), cohorts=list(reversed(cohorts)))
            assert schedule(shuffled, now=NOW, fair_sharing=config) == result
            check_decisions(cluster, result)
            cluster.apply(result)
            used = {name: u.get(FR, 0) for name, u in usage(cluster).items()}
            assert tree_respected(cqs, cohorts, used) == []
            event("admitted", len(result.admitted) > 0)
            event("preempted", len(result.preemptions) > 0)
            event("borrowed", any(a.borrowing for a in result.admitted))
            event("fair victims", any(v.reason == "InCohortFairSharing" for p in result.preemptions for v in p.victims))


def test_tree_oracle_can_fail() -> None:
    cqs = [cluster_queue("a", group(("f0", [quota("cpu", 2)])), cohort="dept")]
    dept = cohort("dept", group(("f0", [quota("cpu", 0, borrowing=1)])), parent="org")
    org = cohort("org", group(("f0", [quota("cpu", 4)])))
    assert tree_respected(cqs, [org, dept], {"a": 3 * UNIT}) == []
    assert tree_respected(cqs, [org, dept], {"a": 4 * UNIT}) != []  # the department may borrow only 1
    lender = cohort("dept", group(("f0", [quota("cpu", 0, lending=0)])), parent="org")
    other = cluster_queue("b", group(("f0", [quota("cpu", 0)])), cohort="org")
    assert tree_respected([*cqs, other], [org, lender], {"b": 4 * UNIT}) == []
    assert tree_respected([*cqs, other], [org, lender], {"b": 5 * UNIT}) != []  # the department lends nothing
