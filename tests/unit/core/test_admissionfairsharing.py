"""Admission fair sharing: decayed LocalQueue usage orders the workloads of a ClusterQueue."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from fractions import Fraction

from tests.unit.core.builders import NOW, admitted, cpu_queue, local_queue, snapshot, workload
from webhook.core.admissionfairsharing import USAGE_BASED, AdmissionFairSharing, next_consumed, score
from webhook.core.scheduler import schedule

AFS = AdmissionFairSharing(enabled=True, usage_half_life_seconds=600, usage_sampling_interval_seconds=60)


def test_usage_halves_every_half_life_and_is_sampled_at_most_every_interval() -> None:
    before = NOW - timedelta(seconds=600)
    assert next_consumed({"cpu": 8.0}, before, {}, NOW, AFS) == ({"cpu": 4.0}, NOW)
    assert next_consumed({"cpu": 8.0}, before, {"cpu": 8.0}, NOW, AFS) == ({"cpu": 8.0}, NOW)
    assert next_consumed({"cpu": 8.0}, NOW - timedelta(seconds=30), {}, NOW, AFS) is None
    assert next_consumed({}, None, {"cpu": 2.0}, NOW, AFS) == ({"cpu": 2.0}, NOW)  # the first sample


def test_score_weighs_resources_and_divides_by_the_queue_weight() -> None:
    config = replace(AFS, resource_weights={"cpu": 2.0, "memory": 0.0})
    assert score({"cpu": 3.0, "memory": 1e9}, Fraction(2), config) == 3.0


def test_a_local_queue_that_just_arrived_overtakes_a_heavily_used_one() -> None:
    cq = replace(cpu_queue("shared", 1), admission_mode=USAGE_BASED)
    heavy = replace(local_queue("shared", name="heavy"), consumed={"cpu": 50.0}, last_update=NOW)
    newcomer = local_queue("shared", name="newcomer")
    wls = [
        *(workload(f"old-{i}", queue="heavy", age=i) for i in range(3)),  # older: first under plain FIFO
        workload("new", queue="newcomer", age=100),
    ]
    snap = snapshot([cq], wls, local_queues=[heavy, newcomer])
    assert [a.workload[1] for a in schedule(snap, now=NOW, admission_fair_sharing=AFS).admitted] == ["new"]
    assert [a.workload[1] for a in schedule(snap, now=NOW).admitted] == ["old-0"]
    plain = replace(cq, admission_mode="")
    plain_snap = snapshot([plain], wls, local_queues=[heavy, newcomer])
    assert [a.workload[1] for a in schedule(plain_snap, now=NOW, admission_fair_sharing=AFS).admitted] == ["old-0"]


def test_a_zero_weight_local_queue_goes_last_even_unused() -> None:
    assert score({}, Fraction(0), AFS) == float("inf")


def test_entry_penalty_lets_local_queues_take_turns_within_one_pass() -> None:
    # Neither LocalQueue used anything: without the penalty a's older workloads would take all four places.
    cq = replace(cpu_queue("shared", 4), admission_mode=USAGE_BASED)
    lqs = [local_queue("shared", name="a"), local_queue("shared", name="b")]
    wls = [
        *(workload(f"a-{i}", queue="a", age=i) for i in range(4)),
        *(workload(f"b-{i}", queue="b", age=10 + i) for i in range(4)),
    ]
    snap = snapshot([cq], wls, local_queues=lqs)
    admitted = [a.workload[1] for a in schedule(snap, now=NOW, admission_fair_sharing=AFS).admitted]
    assert admitted == ["a-0", "b-0", "a-1", "b-1"]
    no_half_life = replace(AFS, usage_half_life_seconds=0)  # Kueue's penalty is 0 then: plain order by usage
    admitted = [a.workload[1] for a in schedule(snap, now=NOW, admission_fair_sharing=no_half_life).admitted]
    assert admitted == ["a-0", "a-1", "a-2", "a-3"]


def test_workloads_admitted_since_the_last_sample_still_count_as_a_penalty() -> None:
    # a's last sample saw nothing, but it has had 2 cpu admitted since; b used a little before its sample.
    cq = replace(cpu_queue("shared", 3), admission_mode=USAGE_BASED)
    sampled = NOW - timedelta(seconds=30)
    a = replace(local_queue("shared", name="a"), last_update=sampled)
    b = replace(local_queue("shared", name="b"), consumed={"cpu": 0.01}, last_update=sampled)
    held = admitted(workload("a-held", queue="a", cpu=2), "shared", reserved_age=3600 - 10)  # after the sample
    wls = [held, workload("a-next", queue="a", age=1), workload("b-next", queue="b", age=2)]
    snap = snapshot([cq], wls, local_queues=[a, b])
    # 2 cpu * (1 - 0.5^(60/600)) = 0.13 > 0.01: b goes first although a's workload is older.
    assert [x.workload[1] for x in schedule(snap, now=NOW, admission_fair_sharing=AFS).admitted] == ["b-next"]
    before = admitted(workload("a-held", queue="a", cpu=2), "shared", reserved_age=3600 - 60)  # before the sample
    snap = snapshot([cq], [before, *wls[1:]], local_queues=[a, b])
    assert [x.workload[1] for x in schedule(snap, now=NOW, admission_fair_sharing=AFS).admitted] == ["a-next"]
