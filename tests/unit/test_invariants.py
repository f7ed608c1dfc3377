"""The e2e invariant checker itself: it must see each way a job can run beyond its admission."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.invariants import Snapshot, violations

JOB_UID = "job-uid"


def make_job(*, suspend: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns", "uid": JOB_UID}, "spec": {"suspend": suspend}, "status": {}}


def make_pod(i: int, cpu: str = "1", phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {"name": f"p{i}", "namespace": "ns", "ownerReferences": [{"uid": JOB_UID, "controller": True}]},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": phase},
    }


def make_workload(*, count: int = 2, cpu: str = "2", admitted: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if admitted:
        status["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "count": count, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": cpu}}
            ],
        }
    return {
        "metadata": {"name": "job-j", "namespace": "ns", "ownerReferences": [{"uid": JOB_UID, "controller": True}]},
        "spec": {"podSets": [{"name": "main", "count": count}]},
        "status": status,
    }


CQ = {
    "metadata": {"name": "cq"},
    "spec": {"resourceGroups": [{"flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]},
}


@pytest.mark.parametrize(
    ("pods", "workload", "fragment"),
    [
        pytest.param([make_pod(0), make_pod(1)], make_workload(), None, id="within"),
        pytest.param(
            [make_pod(i) for i in range(3)], make_workload(), "has 3 live pods; its Workload admits 2", id="too-many"
        ),
        pytest.param([make_pod(0, "3"), make_pod(1)], make_workload(), "request 4 cpu; admitted 2", id="too-big"),
        pytest.param(
            [make_pod(0)], make_workload(admitted=False), "without a Workload that holds quota", id="unadmitted"
        ),
        pytest.param([make_pod(0)], None, "without a Workload that holds quota", id="no-workload"),
        pytest.param(
            [make_pod(i, phase="Succeeded") for i in range(5)], make_workload(), None, id="finished-pods-do-not-count"
        ),
        pytest.param(
            [], make_workload(count=8, cpu="8"), "holds 8 of ('f', 'cpu') > nominal 4", id="queue-over-committed"
        ),
    ],
)
def test_violations(pods: list[dict[str, Any]], workload: dict[str, Any] | None, fragment: str | None) -> None:
    snapshot = Snapshot("1", [make_job()], pods, [workload] if workload else [], [CQ])
    found = violations(snapshot, ["ns"])
    if fragment is None:
        assert found == []
    else:
        assert any(fragment in problem for problem in found), found


def test_jobs_outside_the_namespaces_checked_are_ignored() -> None:
    snapshot = Snapshot("1", [make_job()], [make_pod(0)], [], [CQ])
    assert violations(snapshot, ["elsewhere"]) == []
