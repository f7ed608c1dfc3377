"""The backlog: each LocalQueue's pending workloads by shape, in queue order, kept in step by ``put``."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.unit.core.builders import NOW, NS, admitted, pod_set, workload
from webhook.api import constants
from webhook.api.workload import Condition, Workload
from webhook.core.backlog import Backlog


def lines(backlog: Backlog) -> dict[tuple[str, str], list[list[str]]]:
    """Each LocalQueue's lines as lists of names (lines in the order of their first workload)."""
    out = {}
    for lq_key, by_shape in backlog.local_queues():
        out[lq_key] = sorted(([wl.name for wl in line] for line in by_shape.values()), key=lambda names: names[0])
    return out


def test_workloads_are_kept_per_local_queue_and_shape_in_queue_order() -> None:
    small = [workload(f"s{i}", cpu=1, age=10 - i) for i in range(3)]  # s2 oldest
    big = workload("big", cpu=4, age=0)
    urgent = workload("urgent", cpu=1, age=20, priority=5)
    other = workload("other", cpu=1, queue="second")
    backlog = Backlog.of([*small, big, urgent, other])
    assert lines(backlog) == {
        (NS, "main"): [["big"], ["urgent", "s2", "s1", "s0"]],
        (NS, "second"): [["other"]],
    }
    assert len(backlog) == 6


def test_put_places_replaces_and_removes_as_of_builds_them() -> None:
    first, second, third = (workload(n, cpu=1, age=a) for n, a in (("a", 3), ("b", 1), ("c", 2)))
    backlog = Backlog()
    for wl in (first, second, third):
        backlog.put(wl.key, wl)
    assert lines(backlog) == lines(Backlog.of([first, second, third])) == {(NS, "main"): [["b", "c", "a"]]}
    bumped = replace(first, priority=9)  # a new version: moves to the front
    backlog.put(first.key, bumped)
    assert lines(backlog) == {(NS, "main"): [["a", "b", "c"]]}
    backlog.put(second.key, admitted(second, "cq"))  # admitted: no longer pending
    finished = replace(third, conditions=(Condition(constants.COND_FINISHED, "True"),))
    backlog.put(third.key, finished)
    assert lines(backlog) == {(NS, "main"): [["a"]]}
    backlog.put(first.key, None)  # gone
    assert lines(backlog) == {}
    assert len(backlog) == 0


def test_a_workload_with_a_requeue_time_is_kept_apart_until_it_has_none() -> None:
    waiting = workload("evicted", cpu=1)
    timed = replace(waiting, requeue_at=NOW + timedelta(seconds=30))
    backlog = Backlog.of([timed])
    assert lines(backlog) == {}
    assert list(backlog.timed()) == [timed]
    backlog.put(timed.key, waiting)
    assert list(backlog.timed()) == []
    assert lines(backlog) == {(NS, "main"): [["evicted"]]}


def test_workloads_of_one_shape_share_a_line_whatever_their_pod_set_objects() -> None:
    one = workload("one", pod_set(count=2, cpu=1))
    two = workload("two", pod_set(count=2, cpu=1))
    assert one.pod_sets is not two.pod_sets
    assert lines(Backlog.of([one, two])) == {(NS, "main"): [["one", "two"]]}


def test_only_pending_workloads_are_kept() -> None:
    inactive: Workload = replace(workload("off", cpu=1), active=False)
    assert len(Backlog.of([inactive, admitted(workload("on", cpu=1), "cq")])) == 0


def test_a_backlog_built_at_once_is_kept_in_step_by_put_all_the_same() -> None:
    a, b, c = (workload(n, cpu=1, age=i) for i, n in enumerate("abc"))
    backlog = Backlog.of([a, b])
    assert len(backlog) == 2
    backlog.put(a.key, None)
    backlog.put(c.key, c)
    backlog.put(b.key, replace(b, priority=1))
    assert lines(backlog) == {(NS, "main"): [["b", "c"]]}
    assert len(backlog) == 2


def test_membership_is_by_key_for_lines_and_timed_workloads_alike() -> None:
    queued, timed = workload("queued", cpu=1), replace(workload("timed", cpu=1), requeue_at=NOW)
    backlog = Backlog.of([queued, timed])
    assert queued.key in backlog
    assert timed.key in backlog
    backlog.put(queued.key, None)
    assert queued.key not in backlog
