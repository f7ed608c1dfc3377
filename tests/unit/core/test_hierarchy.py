"""The cohort tree: quota owned by cohorts, borrowing and lending limits at every level, cycles, reclamation."""

from __future__ import annotations

import pytest

from tests.unit.core.builders import (
    NOW,
    admitted,
    cohort,
    cpu_queue,
    group,
    quota,
    snapshot,
    workload,
)
from webhook.api import constants
from webhook.api.clusterqueue import ANY, ClusterQueue, ResourceGroup
from webhook.api.cohort import Cohort
from webhook.api.workload import Workload
from webhook.core.decisions import SchedulingResult
from webhook.core.fairsharing import FairSharing
from webhook.core.quota import QuotaBook
from webhook.core.scheduler import schedule

CPU = ("default", "cpu")
UNIT = 10**9


def cpu_group(nominal: int, *, borrowing: int | None = None, lending: int | None = None) -> ResourceGroup:
    return group(("default", [quota("cpu", nominal, borrowing=borrowing, lending=lending)]))


def run(cqs: list[ClusterQueue], cohorts: list[Cohort], wls: list[Workload]) -> SchedulingResult:
    return schedule(snapshot(cqs, wls, cohorts=cohorts), now=NOW)


def admitted_names(result: SchedulingResult) -> list[str]:
    return sorted(a.workload[1] for a in result.admitted)


def org(
    *, dept_borrowing: int | None = None, dept_lending: int | None = None
) -> tuple[list[ClusterQueue], list[Cohort]]:
    """organisation (8 cpu of its own) -> dept-a, dept-b -> a1, a2 (2 each), b1, b2 (2 each)."""
    dept = cpu_group(0, borrowing=dept_borrowing, lending=dept_lending)
    cohorts = [
        cohort("org", cpu_group(8)),
        cohort("dept-a", dept, parent="org"),
        cohort("dept-b", parent="org"),
    ]
    cqs = [cpu_queue(name, 2, cohort=f"dept-{name[0]}") for name in ("a1", "a2", "b1", "b2")]
    return cqs, cohorts


def test_subtree_quota_adds_up_through_the_tree() -> None:
    cqs, cohorts = org()
    book = QuotaBook(cqs, cohorts)
    assert book.cohorts["dept-a"].subtree[CPU] == 4 * UNIT
    assert book.cohorts["org"].subtree[CPU] == 16 * UNIT
    assert book.queues["a1"].potential(CPU) == 16 * UNIT
    assert book.tree_of("a1") == book.tree_of("b2") == "cohort/org"


def test_queue_borrows_cohort_owned_quota_through_the_tree() -> None:
    cqs, cohorts = org()
    wls = [workload(f"w{i}", queue="a1", cpu=4, age=i) for i in range(4)]
    result = run(cqs, cohorts, wls)
    assert admitted_names(result) == ["w0", "w1", "w2", "w3"]  # 16 = 4 x 2 of the queues + 8 of the organisation


def test_borrowing_stops_at_a_departments_limit() -> None:
    cqs, cohorts = org(dept_borrowing=2)
    wls = [workload(f"w{i}", queue="a1", cpu=2, age=i) for i in range(8)]
    result = run(cqs, cohorts, wls)
    # dept-a owns 4 (a1 + a2) and may borrow 2 more from the organisation: 6 in all, 3 workloads of 2.
    assert admitted_names(result) == ["w0", "w1", "w2"]
    reason = next(p for p in result.pending if p.workload[1] == "w3")
    assert reason.reason == constants.REASON_WAITING_FOR_QUOTA


def test_borrowing_limit_also_caps_what_the_queue_could_ever_hold() -> None:
    cqs, cohorts = org(dept_borrowing=2)
    result = run(cqs, cohorts, [workload("huge", queue="a1", cpu=7)])
    assert result.admitted == ()
    (p,) = result.pending
    assert p.reason == constants.REASON_EXCEEDS_MAX_QUOTA
    assert "needs 7, more than the 6 the ClusterQueue can ever use" in p.message


def test_department_lending_limit_keeps_quota_for_its_own_queues() -> None:
    cqs, cohorts = org(dept_lending=1)
    # dept-a lends at most 1 of its 4: b1 can get 2 (own) + 2 (b2) + 8 (org) + 1 (dept-a) = 13 at most.
    wls = [workload(f"w{i}", queue="b1", cpu=1, age=i) for i in range(15)]
    result = run(cqs, cohorts, wls)
    assert len(result.admitted) == 13
    book = QuotaBook(cqs, cohorts)
    assert book.queues["b1"].potential(CPU) == 13 * UNIT
    assert book.queues["a1"].potential(CPU) == 16 * UNIT


def test_usage_is_accounted_at_every_level() -> None:
    cqs, cohorts = org()
    book = QuotaBook(cqs, cohorts)
    book.queues["a1"].add({CPU: 5 * UNIT})
    assert book.cohorts["dept-a"].usage[CPU] == 5 * UNIT  # a1 keeps nothing back: all of it is drawn from dept-a
    assert book.cohorts["org"].usage[CPU] == 5 * UNIT
    assert book.cohorts["dept-a"].borrowing(CPU)  # 5 > the 4 it holds
    assert book.queues["a2"].available(CPU) == 11 * UNIT
    book.queues["a1"].add({CPU: 5 * UNIT}, -1)
    assert book.cohorts["org"].usage[CPU] == 0


def test_cohort_named_only_by_queues_behaves_as_a_flat_cohort() -> None:
    cqs = [cpu_queue("x", 2, cohort="flat"), cpu_queue("y", 2, cohort="flat")]
    result = run(cqs, [], [workload(f"w{i}", queue="x", cpu=1, age=i) for i in range(5)])
    assert len(result.admitted) == 4


def test_parent_that_does_not_exist_is_an_implicit_root() -> None:
    cqs = [cpu_queue("x", 2, cohort="team")]
    cohorts = [cohort("team", cpu_group(3), parent="missing")]
    result = run(cqs, cohorts, [workload(f"w{i}", queue="x", cpu=1, age=i) for i in range(6)])
    assert len(result.admitted) == 5


@pytest.mark.parametrize(
    ("parents", "cycle"),
    [
        pytest.param({"a": "a"}, "a -> a", id="self-parent"),
        pytest.param({"a": "b", "b": "a"}, "a -> b -> a", id="two-cycle"),
        pytest.param({"a": "b", "b": "c", "c": "b"}, "b -> c -> b", id="hangs-below-a-cycle"),
    ],
)
def test_queues_under_a_cohort_cycle_admit_nothing_and_say_why(parents: dict[str, str], cycle: str) -> None:
    cqs = [cpu_queue("x", 4, cohort="a"), cpu_queue("free", 4)]
    cohorts = [cohort(name, parent=parent) for name, parent in parents.items()]
    result = run(cqs, cohorts, [workload("w", queue="x"), workload("v", queue="free")])
    assert admitted_names(result) == ["v"]
    (p,) = result.pending
    assert p.reason == constants.REASON_MISCONFIGURED
    assert p.message.startswith(f"ClusterQueue x is in cohort a, whose parents form a cycle ({cycle})")


def test_reclaim_across_the_tree_takes_back_what_a_cousin_borrowed() -> None:
    cqs, cohorts = org()
    cqs = [cpu_queue("a1", 2, cohort="dept-a", reclaim=ANY), *cqs[1:]]
    holders = [admitted(workload(f"b{i}", queue="b1", cpu=4, age=i), "b1", reserved_age=i) for i in range(4)]
    result = run(cqs, cohorts, [*holders, workload("mine", queue="a1", cpu=2, age=10)])
    (p,) = result.preemptions
    (victim,) = p.victims
    assert victim.reason == constants.PREEMPTED_IN_COHORT_RECLAMATION
    assert victim.workload[1] == "b3"  # the most recently admitted of the borrowing cousin


def test_no_reclaim_from_a_queue_within_its_own_quota() -> None:
    cqs = [cpu_queue("a1", 2, cohort="dept-a", reclaim=ANY), cpu_queue("b1", 2, cohort="dept-b")]
    cohorts = [cohort("dept-a", parent="org"), cohort("dept-b", parent="org"), cohort("org")]
    holders = [admitted(workload("b", queue="b1", cpu=2), "b1")]
    result = run(cqs, cohorts, [*holders, workload("mine", queue="a1", cpu=3, age=10)])
    assert result.preemptions == ()
    assert result.admitted == ()


# -- borrowing level: heads served nearer in the tree go first ------------------------------------------------


def test_borrowing_level_is_the_height_of_the_lowest_subtree_that_holds_the_workload() -> None:
    cqs, cohorts = org()
    book = QuotaBook(cqs, cohorts)
    assert [book.cohorts[c].height for c in ("dept-a", "dept-b", "org")] == [1, 1, 2]
    a1 = book.queues["a1"]
    assert a1.borrowing_level(CPU, 2 * UNIT) == 0  # its own nominal quota
    assert a1.borrowing_level(CPU, 3 * UNIT) == 1  # a2's quota, inside dept-a
    assert a1.borrowing_level(CPU, 5 * UNIT) == 2  # needs the organisation
    a1.add({CPU: 2 * UNIT})
    book.queues["a2"].add({CPU: 2 * UNIT})
    assert a1.borrowing_level(CPU, 1 * UNIT) == 2  # dept-a is full: from the organisation now
    assert a1.borrowing_level(CPU, 100 * UNIT) == 2  # nothing holds it: the root's height


@pytest.mark.parametrize("fair", [False, True])
def test_a_head_borrowing_within_its_department_goes_before_one_borrowing_from_the_organisation(fair: bool) -> None:
    # organisation (1 cpu) -> dept-x (1 cpu of its own) -> x1; dept-y (none) -> y1. Both queues have no quota:
    # x1's head borrows from dept-x (level 1), y1's older and bigger head from the organisation (level 2); only
    # one of them fits. A yes/no "borrowing" flag would let the older one win.
    cohorts = [
        cohort("org", cpu_group(1)),
        cohort("dept-x", cpu_group(1), parent="org"),
        cohort("dept-y", parent="org"),
    ]
    cqs = [cpu_queue("x1", 0, cohort="dept-x"), cpu_queue("y1", 0, cohort="dept-y")]
    wls = [workload("y-big", queue="y1", cpu=2, age=0), workload("x-small", queue="x1", cpu=1, age=10)]
    snap = snapshot(cqs, wls, cohorts=cohorts)
    result = schedule(snap, now=NOW, fair_sharing=FairSharing(enabled=fair))
    assert [(a.workload[1], a.borrowing) for a in result.admitted] == [("x-small", True)]
