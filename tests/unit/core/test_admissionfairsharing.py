"""Admission fair sharing: decayed LocalQueue usage orders the workloads of a ClusterQueue."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from fractions import Fraction

from tests.unit.core.builders import NOW, cpu_queue, local_queue, snapshot, workload
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
