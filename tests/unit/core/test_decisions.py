"""What the reconciler writes: status.admission, conditions, and ClusterQueue usage."""

from __future__ import annotations

from tests.unit.core.builders import (
    NOW,
    admitted,
    cluster_queue,
    cpu_queue,
    group,
    pod_set,
    q,
    quota,
    snapshot,
    workload,
)
from webhook.api import constants
from webhook.api.workload import parse_admission
from webhook.core.decisions import admission_status, pending_condition, quota_reserved_condition
from webhook.core.scheduler import schedule
from webhook.core.usage import cluster_queue_usage, workload_usage


def test_admission_status_round_trips_through_the_parser() -> None:
    cq = cluster_queue("main", group(("default", [quota("cpu", 8), quota("memory", "8Gi")])))
    result = schedule(snapshot([cq], [workload("a", pod_set(count=3, cpu="1500m", memory="2Gi"))]), now=NOW)
    (decision,) = result.admitted
    status = admission_status(decision)
    assert status["podSetAssignments"][0]["resourceUsage"] == {"cpu": "4500m", "memory": "6Gi"}
    assert parse_admission(status) == decision.admission()


def test_conditions_carry_kueue_reasons_and_the_given_time() -> None:
    result = schedule(snapshot([cpu_queue("main", 1)], [workload("a"), workload("b", age=1)]), now=NOW)
    reserved = quota_reserved_condition(result.admitted[0], NOW)
    assert reserved == {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue main",
        "lastTransitionTime": "2026-01-01T01:00:00Z",
    }
    waiting = pending_condition(result.pending[0], NOW)
    assert (waiting["status"], waiting["reason"]) == ("False", constants.REASON_WAITING_FOR_QUOTA)
    assert waiting["message"].endswith("position 1 of 1 in ClusterQueue main")


def test_cluster_queue_usage_sums_holders_of_that_queue_only() -> None:
    holders = [
        admitted(workload("a", cpu=2), "main"),
        admitted(workload("b", pod_set(count=2, cpu="500m")), "main", flavor_name="spot"),
        admitted(workload("c", cpu=7), "other"),
        workload("pending", cpu=5),
    ]
    assert cluster_queue_usage("main", holders) == {("default", "cpu"): q(2), ("spot", "cpu"): q(1)}
    assert workload_usage(holders[3]) == {}
