"""Queue order, StrictFIFO vs BestEffortFIFO, and many admissions per queue in one pass."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tests.unit.core.builders import NOW, admitted, cpu_queue, snapshot, workload
from webhook.api import constants
from webhook.api.clusterqueue import BEST_EFFORT_FIFO, STRICT_FIFO, ClusterQueue
from webhook.api.workload import Condition, Workload
from webhook.core.decisions import RETRY_ON_TIME, SchedulingResult
from webhook.core.scheduler import schedule


def run(cqs: list[ClusterQueue], wls: list[Workload]) -> SchedulingResult:
    return schedule(snapshot(cqs, wls), now=NOW)


def names(result: SchedulingResult) -> list[str]:
    return [a.workload[1] for a in result.admitted]


@pytest.mark.parametrize(
    ("wls", "expected"),
    [
        pytest.param(
            [workload("old-low", cpu=3, priority=1, age=0), workload("new-high", cpu=3, priority=9, age=5)],
            ["new-high"],
            id="priority-first",
        ),
        pytest.param(
            [workload("newer", cpu=3, age=5), workload("older", cpu=3, age=0)],
            ["older"],
            id="then-creation-time",
        ),
    ],
)
def test_order(wls: list[Workload], expected: list[str]) -> None:
    assert names(run([cpu_queue("main", 4)], wls)) == expected


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param(STRICT_FIFO, ["a"], id="strict-fifo-blocks-behind-head"),
        pytest.param(BEST_EFFORT_FIFO, ["a", "small"], id="best-effort-lets-smaller-through"),
    ],
)
def test_queueing_strategy(strategy: str, expected: list[str]) -> None:
    wls = [workload("a", cpu=2, age=0), workload("big", cpu=5, age=1), workload("small", cpu=1, age=2)]
    cq = cpu_queue("main", 4, strategy=strategy, cohort="c")
    other = cpu_queue("other", 2, cohort="c")
    result = run([cq, other], wls)
    assert names(result) == expected


def test_strict_fifo_says_who_blocks() -> None:
    wls = [workload("big", cpu=5, age=1), workload("small", cpu=1, age=2)]
    result = run([cpu_queue("main", 4, strategy=STRICT_FIFO)], wls)
    small = next(p for p in result.pending if p.workload[1] == "small")
    assert small.reason == constants.REASON_WAITING_FOR_QUOTA
    assert "StrictFIFO: waiting behind team/big" in small.message
    assert small.position == 2


def test_deep_queue_drains_in_one_pass() -> None:
    # Kueue would admit one of these per cycle; all 100 fit, so all are admitted now, in queue order.
    wls = [workload(f"w{i:03}", cpu=1, age=i) for i in range(100)]
    result = run([cpu_queue("main", 100)], wls)
    assert names(result) == [f"w{i:03}" for i in range(100)]


def test_positions_count_only_waiting_workloads() -> None:
    wls = [workload(f"w{i}", cpu=2, age=i) for i in range(5)]
    result = run([cpu_queue("main", 4)], wls)
    assert names(result) == ["w0", "w1"]
    assert [(p.workload[1], p.position, p.queue_length) for p in result.pending] == [
        ("w2", 1, 3),
        ("w3", 2, 3),
        ("w4", 3, 3),
    ]


def test_a_shape_that_does_not_fit_is_left_behind_whole_and_each_of_it_explained_in_place() -> None:
    # BestEffortFIFO: once big-0 does not fit, the rest of its shape is not tried again, yet each keeps its place in
    # the queue and the same reason, between the small ones admitted past it and the one that no longer fits.
    wls = [
        *(workload(f"big-{i}", cpu=5, age=2 * i) for i in range(3)),
        *(workload(f"small-{i}", cpu=1, age=2 * i + 1) for i in range(4)),
    ]
    result = run([cpu_queue("main", 3)], wls)
    assert names(result) == ["small-0", "small-1", "small-2"]
    explained = [(p.workload[1], p.position, p.queue_length, p.reason) for p in result.pending]
    assert explained == [
        ("big-0", 1, 4, constants.REASON_EXCEEDS_MAX_QUOTA),
        ("big-1", 2, 4, constants.REASON_EXCEEDS_MAX_QUOTA),
        ("big-2", 3, 4, constants.REASON_EXCEEDS_MAX_QUOTA),
        ("small-3", 4, 4, constants.REASON_WAITING_FOR_QUOTA),
    ]
    assert result.pending[0].detail == result.pending[1].detail == result.pending[2].detail
    assert "needs 5" in result.pending[0].detail
    front = schedule(snapshot([cpu_queue("main", 3)], wls), now=NOW, positions=2)
    assert (front.admitted, front.pending) == (result.admitted, result.pending[:2])


def test_non_borrowing_workloads_go_before_borrowing_ones() -> None:
    # A's head is older and higher priority but must borrow; B's fits in B's own quota. Both cannot fit.
    cqs = [cpu_queue("a", 2, cohort="c"), cpu_queue("b", 4, cohort="c")]
    wls = [workload("borrower", cpu=4, queue="a", priority=5, age=0), workload("owner", cpu=4, queue="b", age=9)]
    result = run(cqs, wls)
    assert names(result) == ["owner"]


def test_borrowing_never_takes_quota_a_later_round_needs_within_nominal() -> None:
    # Deliberately better than Kueue's cycles: there, cycle 1 admits b1 and then a1 borrowing B's other
    # 2 CPU, and in cycle 2 b2 finds B's own quota lent out. Here phase one admits all non-borrowing work
    # of the pass first, so B keeps its quota and a1 waits.
    cqs = [cpu_queue("a", 0, cohort="c"), cpu_queue("b", 4, cohort="c")]
    wls = [
        workload("a1", cpu=2, queue="a", priority=5, age=0),
        workload("b1", cpu=2, queue="b", age=2),
        workload("b2", cpu=2, queue="b", age=3),
    ]
    assert names(run(cqs, wls)) == ["b1", "b2"]


def test_backoff_keeps_a_requeued_workload_out_until_requeue_at() -> None:
    wl = workload("a")
    later = replace(wl, requeue_at=NOW + timedelta(seconds=30))
    result = run([cpu_queue("main", 4)], [later])
    assert result.admitted == ()
    assert result.pending[0].retry_on == RETRY_ON_TIME
    earlier = replace(wl, requeue_at=NOW - timedelta(seconds=1))
    assert names(run([cpu_queue("main", 4)], [earlier])) == ["a"]


def test_finished_and_inactive_workloads_are_ignored() -> None:
    holder = admitted(workload("done", cpu=4), "main")
    finished = replace(holder, conditions=(*holder.conditions, Condition(constants.COND_FINISHED, "True")))
    inactive = replace(workload("off"), active=False)
    result = run([cpu_queue("main", 4)], [finished, inactive, workload("a", cpu=4)])
    assert names(result) == ["a"]
    assert result.pending == ()


def test_same_snapshot_same_decisions_whatever_the_input_order() -> None:
    cqs = [cpu_queue("a", 3, cohort="c"), cpu_queue("b", 3, cohort="c")]
    wls = [workload(f"w{i}", cpu=1 + i % 3, queue="ab"[i % 2], priority=i % 4, age=i % 5) for i in range(20)]
    forward = run(cqs, wls)
    backward = run(list(reversed(cqs)), list(reversed(wls)))
    assert forward == backward
