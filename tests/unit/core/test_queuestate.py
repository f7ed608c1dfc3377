"""Queue status as pure decisions: activeness with Kueue's reasons, and the counts and usage of a snapshot."""

from __future__ import annotations

import dataclasses

import pytest

from tests.unit.core.builders import admitted, cpu_queue, local_queue, q, snapshot, workload
from webhook.api.clusterqueue import ClusterQueue
from webhook.api.localqueue import LocalQueue
from webhook.core.queuestate import (
    Activeness,
    cluster_queue_activeness,
    count_workloads,
    local_queue_activeness,
    usage_of,
)

CQ = cpu_queue("cq", 10, cohort="team")


@pytest.mark.parametrize(
    ("cq", "flavors", "cycle", "expected"),
    [
        pytest.param(CQ, ["default"], None, Activeness(True, "Ready", "Can admit new workloads"), id="ready"),
        pytest.param(
            CQ,
            [],
            None,
            Activeness(False, "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor"),
            id="missing-flavor",
        ),
        pytest.param(
            dataclasses.replace(CQ, stop_policy="Hold"),
            ["default"],
            "a -> b -> a",
            Activeness(False, "Stopped", "ClusterQueue is stopped (stopPolicy Hold)"),
            id="stopped-before-cycle",
        ),
        pytest.param(
            dataclasses.replace(CQ, terminating=True),
            ["default"],
            None,
            Activeness(False, "Terminating", "Can't admit new workloads; clusterQueue is terminating"),
            id="terminating",
        ),
        pytest.param(
            CQ,
            ["default"],
            "a -> b -> a",
            Activeness(
                False,
                "CohortHasCycle",
                "Can't admit new workloads: the parents of cohort team form a cycle (a -> b -> a)",
            ),
            id="cohort-cycle",
        ),
    ],
)
def test_cluster_queue_activeness(
    cq: ClusterQueue, flavors: list[str], cycle: str | None, expected: Activeness
) -> None:
    assert cluster_queue_activeness(cq, flavors=flavors, cycle=cycle) == expected


@pytest.mark.parametrize(
    ("lq", "expected"),
    [
        pytest.param(
            local_queue("cq"), Activeness(True, "Ready", "Can submit new workloads to localQueue"), id="ready"
        ),
        pytest.param(
            local_queue("gone"),
            Activeness(False, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue gone"),
            id="no-cluster-queue",
        ),
        pytest.param(
            dataclasses.replace(local_queue("gone"), stop_policy="HoldAndDrain"),
            Activeness(False, "Stopped", "LocalQueue is stopped"),
            id="stopped-first",
        ),
    ],
)
def test_local_queue_activeness(lq: LocalQueue, expected: Activeness) -> None:
    assert local_queue_activeness(lq, cluster_queues=["cq"]) == expected


def test_counts_and_usage() -> None:
    running = [admitted(workload(f"r{i}", queue="cq", cpu=2), "cq") for i in range(2)]
    waiting = [workload("p1", queue="cq"), workload("p2", queue="nowhere")]
    inactive = dataclasses.replace(workload("off", queue="cq"), active=False)
    counts = count_workloads(snapshot([CQ], [*running, *waiting, inactive]))
    assert [w.name for w in counts.held["cq"]] == ["r0", "r1"]
    assert [w.name for w in counts.held_by_local_queue[("team", "cq")]] == ["r0", "r1"]
    assert counts.pending == {"cq": 1}  # the one in an unknown LocalQueue counts only there
    assert counts.pending_by_local_queue == {("team", "cq"): 1, ("team", "nowhere"): 1}
    assert usage_of(counts.held["cq"]) == {("default", "cpu"): q(4)}
