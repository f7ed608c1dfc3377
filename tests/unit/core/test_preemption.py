"""Preemption: within the ClusterQueue, reclaiming within the cohort, borrowing while reclaiming."""

from __future__ import annotations

import pytest

from tests.unit.core.builders import NOW, admitted, cpu_queue, snapshot, workload
from webhook.api import constants
from webhook.api.clusterqueue import ANY, LOWER_OR_NEWER_EQUAL_PRIORITY, LOWER_PRIORITY, NEVER, ClusterQueue
from webhook.api.workload import Workload
from webhook.core.decisions import SchedulingResult
from webhook.core.scheduler import schedule


def run(cqs: list[ClusterQueue], wls: list[Workload]) -> SchedulingResult:
    return schedule(snapshot(cqs, wls), now=NOW)


def victims(result: SchedulingResult) -> list[tuple[str, str]]:
    return [(v.workload[1], v.reason) for p in result.preemptions for v in p.victims]


def holder(name: str, cpu: int, *, queue: str = "main", priority: int = 0, reserved: int = 0, age: int = 0) -> Workload:
    return admitted(workload(name, cpu=cpu, queue=queue, priority=priority, age=age), queue, reserved_age=reserved)


@pytest.mark.parametrize(
    ("policy", "holders", "preemptor", "expected"),
    [
        pytest.param(
            LOWER_PRIORITY,
            [holder("low", 4, priority=1)],
            workload("high", cpu=4, priority=5, age=10),
            [("low", constants.PREEMPTED_IN_CLUSTER_QUEUE)],
            id="lower-priority-preempted",
        ),
        pytest.param(
            NEVER,
            [holder("low", 4, priority=1)],
            workload("high", cpu=4, priority=5, age=10),
            [],
            id="never-preempts",
        ),
        pytest.param(
            LOWER_PRIORITY,
            [holder("peer", 4, priority=5, age=20)],
            workload("high", cpu=4, priority=5, age=10),
            [],
            id="equal-priority-kept-under-lower-priority",
        ),
        pytest.param(
            LOWER_OR_NEWER_EQUAL_PRIORITY,
            [holder("newer-peer", 4, priority=5, age=20)],
            workload("high", cpu=4, priority=5, age=10),
            [("newer-peer", constants.PREEMPTED_IN_CLUSTER_QUEUE)],
            id="newer-equal-priority-preempted",
        ),
        pytest.param(
            LOWER_OR_NEWER_EQUAL_PRIORITY,
            [holder("older-peer", 4, priority=5, age=1)],
            workload("high", cpu=4, priority=5, age=10),
            [],
            id="older-equal-priority-kept",
        ),
        pytest.param(
            LOWER_PRIORITY,
            [
                holder("a", 2, priority=1, reserved=1),
                holder("b", 2, priority=1, reserved=2),
                holder("c", 2, priority=3),
            ],
            workload("high", cpu=2, priority=5, age=10),
            [("b", constants.PREEMPTED_IN_CLUSTER_QUEUE)],
            id="one-victim-most-recently-admitted-of-the-lowest",
        ),
        pytest.param(
            LOWER_PRIORITY,
            [
                holder("a", 2, priority=1, reserved=1),
                holder("b", 2, priority=2, reserved=2),
                holder("c", 2, priority=3),
            ],
            workload("high", cpu=4, priority=5, age=10),
            [("a", constants.PREEMPTED_IN_CLUSTER_QUEUE), ("b", constants.PREEMPTED_IN_CLUSTER_QUEUE)],
            id="minimal-set-lowest-priority-first",
        ),
        pytest.param(
            LOWER_PRIORITY,
            [holder("low", 1, priority=1), holder("vip", 5, priority=9)],
            workload("high", cpu=3, priority=5, age=10),
            [],
            id="no-preemption-when-it-would-not-fit-anyway",
        ),
    ],
)
def test_within_cluster_queue(
    policy: str, holders: list[Workload], preemptor: Workload, expected: list[tuple[str, str]]
) -> None:
    result = run([cpu_queue("main", 6, within=policy)], [*holders, preemptor])
    assert victims(result) == expected
    assert result.admitted == ()
    (p,) = result.pending
    if expected:
        assert p.reason == constants.REASON_WAITING_FOR_PREEMPTED_WORKLOADS
        assert result.preemptions[0].preemptor == preemptor.key
    else:
        assert p.reason == constants.REASON_WAITING_FOR_QUOTA


def test_fill_back_returns_victims_not_needed() -> None:
    # Greedy order takes "small" (lowest priority) first, then "big"; "big" alone suffices, so "small" is given back.
    holders = [holder("small", 1, priority=1), holder("big", 5, priority=2)]
    result = run([cpu_queue("main", 6, within=LOWER_PRIORITY)], [*holders, workload("high", cpu=5, priority=5)])
    assert victims(result) == [("big", constants.PREEMPTED_IN_CLUSTER_QUEUE)]


def cohort(*, reclaim: str = NEVER, borrow_within: str = NEVER, threshold: int | None = None) -> list[ClusterQueue]:
    return [
        cpu_queue("main", 4, cohort="c", reclaim=reclaim, borrow_within=borrow_within, threshold=threshold),
        cpu_queue("other", 4, cohort="c"),
    ]


@pytest.mark.parametrize(
    ("cqs", "holders", "preemptor", "expected"),
    [
        pytest.param(
            cohort(reclaim=ANY),
            [holder("borrower", 8, queue="other", priority=9)],
            workload("mine", cpu=4),
            [("borrower", constants.PREEMPTED_IN_COHORT_RECLAMATION)],
            id="reclaim-any-even-higher-priority",
        ),
        pytest.param(
            cohort(reclaim=LOWER_PRIORITY),
            [holder("borrower", 8, queue="other", priority=9)],
            workload("mine", cpu=4),
            [],
            id="reclaim-lower-priority-spares-higher",
        ),
        pytest.param(
            cohort(reclaim=ANY),
            [holder("owner", 4, queue="other"), holder("mine-old", 4, queue="main")],
            workload("mine", cpu=2),
            [],
            id="no-reclaim-from-a-queue-within-its-nominal",
        ),
        pytest.param(
            cohort(reclaim=NEVER),
            [holder("borrower", 8, queue="other", priority=0)],
            workload("mine", cpu=4),
            [],
            id="reclaim-never",
        ),
        pytest.param(
            cohort(reclaim=LOWER_PRIORITY, borrow_within=LOWER_PRIORITY),
            [holder("borrower", 6, queue="other", priority=1)],
            workload("mine", cpu=6, priority=5),
            [("borrower", constants.PREEMPTED_IN_COHORT_RECLAIM_WHILE_BORROWING)],
            id="borrow-within-cohort",
        ),
        pytest.param(
            cohort(reclaim=LOWER_PRIORITY, borrow_within=LOWER_PRIORITY, threshold=0),
            [holder("borrower", 6, queue="other", priority=1)],
            workload("mine", cpu=6, priority=5),
            [],
            id="borrow-within-cohort-above-threshold",
        ),
        pytest.param(
            cohort(reclaim=LOWER_PRIORITY),
            [holder("borrower", 6, queue="other", priority=1)],
            workload("mine", cpu=6, priority=5),
            [],
            id="no-borrow-within-cohort-policy",
        ),
    ],
)
def test_within_cohort(
    cqs: list[ClusterQueue], holders: list[Workload], preemptor: Workload, expected: list[tuple[str, str]]
) -> None:
    result = run(cqs, [*holders, preemptor])
    assert victims(result) == expected
    assert result.admitted == ()


def test_two_preemptors_never_share_victims() -> None:
    holders = [holder("low1", 2, priority=1), holder("low2", 2, priority=1, reserved=1)]
    preemptors = [workload("p1", cpu=2, priority=5, age=1), workload("p2", cpu=2, priority=5, age=2)]
    result = run([cpu_queue("main", 4, within=LOWER_PRIORITY)], [*holders, *preemptors])
    assert [(p.preemptor[1], [v.workload[1] for v in p.victims]) for p in result.preemptions] == [
        ("p1", ["low2"]),
        ("p2", ["low1"]),
    ]


def test_preemptor_holds_its_quota_while_victims_run() -> None:
    # After choosing victims for "high", the 1 free CPU must not go to "small": it belongs to "high".
    holders = [holder("low", 4, priority=1)]
    wls = [*holders, workload("high", cpu=5, priority=5), workload("small", cpu=1, priority=0, age=5)]
    result = run([cpu_queue("main", 5, within=LOWER_PRIORITY)], wls)
    assert victims(result) == [("low", constants.PREEMPTED_IN_CLUSTER_QUEUE)]
    assert result.admitted == ()


def test_victim_message_names_the_preemptor() -> None:
    result = run([cpu_queue("main", 4, within=LOWER_PRIORITY)], [holder("low", 4), workload("high", cpu=4, priority=1)])
    (victim,) = result.preemptions[0].victims
    assert (
        victim.message
        == "Preempted to accommodate a workload (UID: uid-high) due to prioritization in the ClusterQueue"
    )


def test_pending_reason_says_when_reclaim_is_disabled() -> None:
    result = run(cohort(), [holder("borrower", 8, queue="other"), workload("mine", cpu=4)])
    (p,) = result.pending
    assert "reclaimWithinCohort is Never" in p.message
