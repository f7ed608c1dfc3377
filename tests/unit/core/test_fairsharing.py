"""Fair sharing: admission by weighted dominant resource share, fair preemption and the shares reported."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.unit.core.builders import NOW, admitted, cohort, cpu_queue, group, quota, snapshot, workload
from webhook.api import constants
from webhook.api.clusterqueue import ANY, LOWER_PRIORITY, NEVER, ClusterQueue
from webhook.api.cohort import Cohort
from webhook.api.workload import Workload
from webhook.core.decisions import SchedulingResult
from webhook.core.fairpreemption import TargetOrder
from webhook.core.fairsharing import (
    LESS_THAN_INITIAL_SHARE,
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    FairSharing,
    Shares,
    status_value,
)
from webhook.core.preemption import Holder
from webhook.core.quota import QuotaBook
from webhook.core.scheduler import schedule

ON = FairSharing(enabled=True)
CPU = ("default", "cpu")
UNIT = 10**9


def run(
    cqs: list[ClusterQueue], wls: list[Workload], *, fair: FairSharing = ON, cohorts: list[Cohort] | None = None
) -> SchedulingResult:
    return schedule(snapshot(cqs, wls, cohorts=cohorts), now=NOW, fair_sharing=fair)


def per_queue(result: SchedulingResult) -> Counter[str]:
    return Counter(a.cluster_queue for a in result.admitted)


def weighted(*, reclaim: str = NEVER) -> list[ClusterQueue]:
    """Two queues without quota of their own, weights 1 and 2, borrowing from a lender with 30 cpu."""
    return [
        cpu_queue("light", 0, cohort="shared", weight=1, reclaim=reclaim, within=LOWER_PRIORITY),
        cpu_queue("heavy", 0, cohort="shared", weight=2, reclaim=reclaim, within=LOWER_PRIORITY),
        cpu_queue("lender", 30, cohort="shared"),
    ]


def saturate(n: int = 40) -> list[Workload]:
    return [workload(f"{q}-{i}", queue=q, cpu=1, age=i) for q in ("light", "heavy") for i in range(n)]


def test_saturated_queues_share_borrowed_quota_by_weight() -> None:
    assert per_queue(run(weighted(), saturate())) == {"light": 10, "heavy": 20}


def test_without_fair_sharing_the_same_queues_take_turns() -> None:
    assert per_queue(run(weighted(), saturate(), fair=FairSharing())) == {"light": 15, "heavy": 15}


def test_non_borrowing_heads_go_before_any_share_comparison() -> None:
    cqs = [cpu_queue("own", 2, cohort="shared"), cpu_queue("borrower", 0, cohort="shared", weight=100)]
    result = run(cqs, [workload("b", queue="borrower", cpu=2, age=0), workload("o", queue="own", cpu=2, age=5)])
    assert [a.workload[1] for a in result.admitted] == ["o"]


def test_weighted_share_is_reported_per_queue_and_cohort() -> None:
    cqs = weighted()
    holders = [admitted(workload(f"l{i}", queue="light", cpu=3), "light") for i in range(2)]
    result = run(cqs, holders)
    shares = dict(result.cluster_queue_shares)
    # light borrows 6 of the 30 the cohort could lend: 200 thousandths, weight 1.
    assert shares == {"heavy": 0, "lender": 0, "light": 200}
    assert dict(result.cohort_shares) == {"shared": 0}  # a root borrows from nobody


def test_share_of_a_weightless_borrower_is_infinite() -> None:
    cqs = [cpu_queue("zero", 0, cohort="c", weight=0), cpu_queue("lender", 4, cohort="c")]
    book = QuotaBook(cqs)
    shares = Shares(book, {"zero": cqs[0].weight}, {})
    assert shares.share(book.queues["zero"]) == 0.0  # borrowing nothing: no share at all
    book.queues["zero"].add({CPU: UNIT})
    assert status_value(shares.share(book.queues["zero"])) == 2**63 - 1


def test_cohort_weight_orders_departments() -> None:
    cohorts = [
        cohort("org", group(("default", [quota("cpu", 30)]))),
        cohort("a", parent="org"),
        cohort("b", parent="org", weight=2),
    ]
    cqs = [cpu_queue("qa", 0, cohort="a"), cpu_queue("qb", 0, cohort="b")]
    wls = [workload(f"{q}-{i}", queue=q, cpu=1, age=i) for q in ("qa", "qb") for i in range(40)]
    assert per_queue(run(cqs, wls, cohorts=cohorts)) == {"qa": 10, "qb": 20}


def holders_of_light(n: int) -> list[Workload]:
    return [admitted(workload(f"l{i}", queue="light", cpu=1, age=i), "light", reserved_age=i) for i in range(n)]


def test_fair_preemption_takes_from_the_queue_above_its_share() -> None:
    # light holds all 30; heavy (weight 2) arrives: it may reclaim while its share stays at most light's.
    result = run(weighted(reclaim=ANY), [*holders_of_light(30), workload("h", queue="heavy", cpu=1, age=100)])
    (p,) = result.preemptions
    (victim,) = p.victims
    assert victim.reason == constants.PREEMPTED_IN_COHORT_FAIR_SHARING
    assert victim.workload[1] == "l29"  # the most recently admitted
    assert "due to Fair Sharing within the cohort" in victim.message


@pytest.mark.parametrize(
    ("strategy", "light_holds", "preempts"),
    [
        # heavy would hold 1 (share 33/2); light holds n, keeps n-1 after: final share (n-1)*33.
        pytest.param(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, 2, True, id="final-share-allows"),
        pytest.param(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, 1, False, id="final-share-forbids"),
        pytest.param(LESS_THAN_INITIAL_SHARE, 1, True, id="initial-share-allows"),
    ],
)
def test_strategies_decide_when_reclaiming_stops(strategy: str, light_holds: int, preempts: bool) -> None:
    cqs = weighted(reclaim=ANY)
    cqs[2] = cpu_queue("lender", 0, cohort="shared")
    cqs.append(cpu_queue("nominal", light_holds, cohort="shared"))  # the lendable pool is exactly what light holds
    fair = FairSharing(enabled=True, preemption_strategies=(strategy,))
    result = run(cqs, [*holders_of_light(light_holds), workload("h", queue="heavy", cpu=1, age=100)], fair=fair)
    assert bool(result.preemptions) is preempts


def test_preemptor_within_nominal_reclaims_without_strategy() -> None:
    cqs = [
        cpu_queue("owner", 4, cohort="c", reclaim=ANY),
        cpu_queue("borrower", 0, cohort="c", weight=1000),
    ]
    holders = [admitted(workload(f"b{i}", queue="borrower", cpu=1), "borrower", reserved_age=i) for i in range(4)]
    result = run(cqs, [*holders, workload("mine", queue="owner", cpu=2, age=10)])
    (p,) = result.preemptions
    assert sorted(v.workload[1] for v in p.victims) == ["b2", "b3"]
    assert {v.reason for v in p.victims} == {constants.PREEMPTED_IN_COHORT_RECLAMATION}


# -- property: a fair-sharing preemption never breaks the strategy it ran under -----------------------------


def _share(used: int, nominal: int, lendable: int, weight: int) -> tuple[float, float]:
    """Oracle for a flat cohort without lending limits: what a queue borrows, over what the cohort could lend,
    over its weight; ordered as Kueue's CompareDRS orders shares: two infinite ones (weight 0) by the unweighted."""
    borrowed = max(0, used - nominal)
    if borrowed == 0 or lendable == 0:
        return 0.0, 0.0
    unweighted = borrowed * 1000 / lendable
    return (float("inf"), unweighted) if weight == 0 else (unweighted / weight, 0.0)


@st.composite
def fair_scenarios(draw: st.DrawFn) -> tuple[list[ClusterQueue], list[Workload], Workload, str]:
    count = draw(st.integers(2, 4))
    cqs = [
        cpu_queue(
            f"q{i}",
            draw(st.integers(0, 4)),
            cohort="c",
            weight=draw(st.integers(0, 3)),
            reclaim=draw(st.sampled_from([ANY, LOWER_PRIORITY])),
            within=LOWER_PRIORITY,
        )
        for i in range(count)
    ]
    book = QuotaBook(cqs)
    holders = []
    for i in range(draw(st.integers(0, 12))):
        target = draw(st.integers(0, count - 1))
        cpu = draw(st.integers(1, 3))
        quota_of = book.queues[f"q{target}"]
        if quota_of.available(CPU) >= cpu * UNIT:  # only a state the quota rules allow
            quota_of.add({CPU: cpu * UNIT})
            wl = workload(f"h{i}", queue=f"q{target}", cpu=cpu, priority=draw(st.integers(0, 2)), age=i)
            holders.append(admitted(wl, f"q{target}", reserved_age=i))
    preemptor = workload(
        "p", queue=f"q{draw(st.integers(0, count - 1))}", cpu=draw(st.integers(1, 4)), priority=3, age=100
    )
    return cqs, holders, preemptor, draw(st.sampled_from([LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE]))


@settings(max_examples=200, deadline=None)
@given(fair_scenarios())
def test_fair_preemption_never_leaves_the_preemptor_above_what_the_strategy_allows(
    scenario: tuple[list[ClusterQueue], list[Workload], Workload, str],
) -> None:
    cqs, holders, preemptor, strategy = scenario
    result = run(cqs, [*holders, preemptor], fair=FairSharing(enabled=True, preemption_strategies=(strategy,)))
    nominal = {cq.name: cq.resource_groups[0].flavors[0].resources[0].nominal.nano for cq in cqs}
    weight = {cq.name: int(cq.weight) for cq in cqs}
    lendable = sum(nominal.values())
    before = Counter[str]()
    for h in holders:
        before[h.queue_name] += h.pod_sets[0].requests["cpu"].nano
    victims = {v.workload[1] for p in result.preemptions for v in p.victims}
    after = Counter[str]()
    for h in holders:
        if h.name not in victims:
            after[h.queue_name] += h.pod_sets[0].requests["cpu"].nano
    need = preemptor.pod_sets[0].requests["cpu"].nano
    mine = preemptor.queue_name
    for p in result.preemptions:
        for v in p.victims:
            if v.reason != constants.PREEMPTED_IN_COHORT_FAIR_SHARING:
                continue
            event(f"fair victim under {strategy}")
            own = _share(after[mine] + need, nominal[mine], lendable, weight[mine])
            theirs = v.cluster_queue
            if strategy == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
                assert own <= _share(after[theirs], nominal[theirs], lendable, weight[theirs])
            else:
                assert own < _share(before[theirs], nominal[theirs], lendable, weight[theirs])
    assert len(victims) == sum(len(p.victims) for p in result.preemptions)


def test_pending_reason_says_whose_share_decided_and_how_much() -> None:
    holders = [admitted(workload(f"h{i}", queue="heavy", cpu=10), "heavy", reserved_age=i) for i in range(3)]
    result = run(weighted(), [*holders, workload("late", queue="light", cpu=1, age=50)])
    (p,) = result.pending
    assert p.workload[1] == "late"
    assert (
        "fair sharing: ClusterQueue light (weight 1) has weighted share 0, 34 with this workload; "
        "highest in cohort shared: ClusterQueue heavy at 500"
    ) in p.message


# -- Kueue's target order for fair preemption ---------------------------------------------------------------


def test_targets_are_visited_from_the_root_down_by_share_the_preemptors_queue_in_its_turn() -> None:
    # org -> dept-a (P, A2), dept-b (B1), a lender; dept-c (C1, and a lender of its own). P (the preemptor's
    # queue) borrows most in dept-a, dept-a more than dept-b: Kueue visits P first (not last), then A2, then
    # dept-b's B1. The lender does not borrow; nor does dept-c as a whole, so C1, although it borrows from its
    # own lender, is never visited.
    cohorts = [cohort(n, parent="org") for n in ("dept-a", "dept-b", "dept-c")]
    cqs = [
        cpu_queue("P", 0, cohort="dept-a"),
        cpu_queue("A2", 0, cohort="dept-a"),
        cpu_queue("B1", 0, cohort="dept-b"),
        cpu_queue("lender", 10, cohort="org"),
        cpu_queue("C1", 0, cohort="dept-c"),
        cpu_queue("C-lender", 2, cohort="dept-c"),
    ]
    book = QuotaBook(cqs, cohorts)
    shares = Shares(book, {}, {})
    for name, cpu in (("P", 4), ("A2", 2), ("B1", 1), ("lender", 1), ("C1", 1)):
        book.queues[name].add({CPU: cpu * UNIT})
    held = {name: [admitted(workload(f"{name}-w", queue=name), name)] for name in ("P", "A2", "B1", "lender", "C1")}
    candidates = {
        name: [Holder(w.key, w.uid, name, 0, w.created, w.quota_reserved_at, {CPU: UNIT}) for w in wls]
        for name, wls in held.items()
    }
    order = TargetOrder(book, shares, book.queues["P"], candidates)
    visited = []
    while (target := order.next()) is not None:
        visited.append(target)
        h = candidates[target].pop(0)
        book.queues[target].add(h.usage, -1)
    assert visited == ["P", "A2", "B1"]


def test_reclaim_candidates_come_only_from_queues_borrowing_when_the_search_starts() -> None:
    # owner's workload needs 2 cpu back; "within" uses only its own 3 cpu, "over" borrows 1: only "over" may lose one.
    cqs = [
        cpu_queue("owner", 2, cohort="c", reclaim=ANY),
        cpu_queue("within", 3, cohort="c"),
        cpu_queue("over", 0, cohort="c"),
    ]
    holders = [
        *(admitted(workload(f"w{i}", queue="within", cpu=1), "within", reserved_age=i) for i in range(3)),
        admitted(workload("o0", queue="over", cpu=2), "over", reserved_age=5),
    ]
    result = run(cqs, [*holders, workload("mine", queue="owner", cpu=2, age=10)])
    (p,) = result.preemptions
    assert [(v.workload[1], v.reason) for v in p.victims] == [("o0", constants.PREEMPTED_IN_COHORT_RECLAMATION)]
