""" "Would it fit?": the scheduler's own decision for a workload that does not exist yet, or for one that does."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from tests.unit.core.builders import NOW, admitted, cluster_queue, cpu_queue, group, pod_set, quota, snapshot, workload
from webhook.api.clusterqueue import LOWER_PRIORITY
from webhook.core.fit import ADMITTED, PENDING, PREEMPTING, explain_workload, would_fit


def test_fits_now_with_its_flavors() -> None:
    cq = cluster_queue("main", group(("on-demand", [quota("cpu", 4)]), ("spot", [quota("cpu", 8)])))
    running = admitted(workload("running", cpu=3), "main", flavor_name="on-demand")
    answer = would_fit(snapshot([cq], [running]), workload("new", cpu=2), now=NOW)
    assert answer.verdict == ADMITTED
    assert answer.cluster_queue == "main"
    assert answer.flavors == (("main", (("cpu", "spot"),)),)  # on-demand has 1 CPU left, spot takes it whole
    assert answer.missing == ()


def test_does_not_fit_says_what_is_missing_and_where_it_would_queue() -> None:
    cq = cpu_queue("main", 4)
    running = admitted(workload("running", cpu=3), "main")
    waiting = workload("waiting", cpu=4, age=10)
    answer = would_fit(snapshot([cq], [running, waiting]), workload("new", cpu=2), now=NOW)
    assert answer.verdict == PENDING
    assert answer.reason == "WaitingForQuota"
    assert (answer.position, answer.queue_length) == (2, 2)  # created now: behind the older waiting one
    assert [(s.resource, s.flavor, s.needed, s.available, s.missing) for s in answer.missing] == [
        ("cpu", "default", "2", "1", "1")
    ]
    assert "cpu in flavor default needs 2, 1 free" in answer.message


def test_more_than_the_queue_can_ever_hold() -> None:
    answer = would_fit(snapshot([cpu_queue("main", 4)], []), workload("huge", cpu=6), now=NOW)
    assert answer.verdict == PENDING
    assert answer.missing[0].note == "more than the ClusterQueue can ever use"
    assert (answer.missing[0].needed, answer.missing[0].available, answer.missing[0].missing) == ("6", "4", "2")


def test_preemption_names_its_victims() -> None:
    cq = cpu_queue("main", 4, within=LOWER_PRIORITY)
    low = admitted(workload("low", cpu=4, priority=0), "main")
    answer = would_fit(snapshot([cq], [low]), workload("high", cpu=4, priority=100), now=NOW)
    assert answer.verdict == PREEMPTING
    assert [(v.name, v.reason) for v in answer.victims] == [("low", "InClusterQueue")]
    assert answer.flavors == (("main", (("cpu", "default"),)),)


def test_an_existing_workload_gets_the_same_answer_as_before_it_existed() -> None:
    cq = cpu_queue("main", 4)
    running = admitted(workload("running", cpu=3), "main")
    candidate = workload("new", cpu=2)
    before = would_fit(snapshot([cq], [running]), candidate, now=NOW)
    created = dataclasses.replace(candidate, created=NOW + timedelta(seconds=1))
    after = explain_workload(snapshot([cq], [running, created]), ("team", "new"), now=NOW + timedelta(seconds=2))
    assert after == before


def test_the_candidate_replaces_a_workload_of_the_same_name() -> None:
    cq = cpu_queue("main", 4)
    old = admitted(workload("same", cpu=4), "main")
    answer = would_fit(snapshot([cq], [old]), workload("same", cpu=2), now=NOW)
    assert answer.verdict == ADMITTED  # its own former usage does not count against it


def test_a_missing_local_queue_is_the_reason() -> None:
    answer = would_fit(snapshot([cpu_queue("main", 4)], []), workload("lost", queue="nope"), now=NOW)
    assert answer.verdict == PENDING
    assert answer.reason == "Misconfigured"
    assert "LocalQueue nope doesn't exist" in answer.message
    assert answer.cluster_queue is None
    assert explain_workload(snapshot([cpu_queue("main", 4)], []), ("team", "absent"), now=NOW) is None


def test_pod_sets_fit_together_or_not_at_all() -> None:
    cq = cpu_queue("main", 4)
    two = workload("two", pod_set("a", 2, cpu=1), pod_set("b", 2, cpu=2))
    answer = would_fit(snapshot([cq], []), two, now=NOW)
    assert answer.verdict == PENDING  # 2 + 4 CPUs > 4
    assert {s.pod_set for s in answer.missing} <= {"a", "b"}
    assert answer.missing
