"""The JobSet adapter: pod sets per replicated job, release and restore of every template, finished, ready."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.views import ObjectView, WorkloadRecord
from webhook.jobs.jobset import ADAPTER
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo

JSON = dict[str, Any]


def make_jobset(*rjs: tuple[str, int, int | None, int | None], suspend: bool = True) -> JSON:
    """``rjs``: (name, replicas, parallelism, completions) per replicated job."""
    replicated = []
    for name, replicas, parallelism, completions in rjs:
        job_spec: JSON = {
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
        }
        if parallelism is not None:
            job_spec["parallelism"] = parallelism
        if completions is not None:
            job_spec["completions"] = completions
        replicated.append({"name": name, "replicas": replicas, "template": {"spec": job_spec}})
    return {
        "metadata": {"name": "js", "namespace": "ns", "uid": "u1"},
        "spec": {"suspend": suspend, "replicatedJobs": replicated},
    }


@pytest.mark.parametrize(
    ("rjs", "counts"),
    [
        pytest.param([("driver", 1, None, None)], {"driver": 1}, id="defaults-to-one-pod"),
        pytest.param([("w", 3, 2, None)], {"w": 6}, id="replicas-times-parallelism"),
        pytest.param([("w", 2, 4, 3)], {"w": 6}, id="parallelism-capped-by-completions"),
        pytest.param([("a", 1, 1, 1), ("b", 2, 2, 2)], {"a": 1, "b": 4}, id="one-pod-set-per-replicated-job"),
    ],
)
def test_pod_sets_count_as_kueue_does(
    rjs: list[tuple[str, int, int | None, int | None]], counts: dict[str, int]
) -> None:
    pod_sets = ADAPTER.pod_sets(ObjectView.of(make_jobset(*rjs)), PodDefaults())
    assert {p["name"]: p["count"] for p in pod_sets} == counts
    assert ADAPTER.pod_count(ObjectView.of(make_jobset(*rjs))) == sum(counts.values())


def test_release_injects_each_pod_set_and_restore_takes_it_back() -> None:
    js = make_jobset(("a", 1, 1, 1), ("b", 1, 1, 1))
    workload = {"spec": {"podSets": ADAPTER.pod_sets(ObjectView.of(js), PodDefaults())}}
    infos = {
        "a": PodSetInfo(name="a", node_selector={"pool": "x"}, labels={"kueue.x-k8s.io/podset": "a"}),
        "b": PodSetInfo(name="b", node_selector={"pool": "y"}, labels={"kueue.x-k8s.io/podset": "b"}),
    }
    running = ADAPTER.released(ObjectView.of(js), infos, {"a": 1, "b": 1})
    assert running["spec"]["suspend"] is False
    selectors = [r["template"]["spec"]["template"]["spec"]["nodeSelector"] for r in running["spec"]["replicatedJobs"]]
    assert selectors == [{"pool": "x"}, {"pool": "y"}]
    stopping = ADAPTER.suspended(ObjectView.of(running))
    assert ADAPTER.is_stopping(ObjectView.of(stopping))
    assert ADAPTER.template_mutable(ObjectView.of(stopping))
    back = ADAPTER.restored(ObjectView.of(stopping), WorkloadRecord.of(workload))
    # The pod specs as created; admission's podset label gone (an empty metadata is all that is left of it).
    pods = [r["template"]["spec"]["template"] for r in back["spec"]["replicatedJobs"]]
    assert [p["spec"] for p in pods] == [
        r["template"]["spec"]["template"]["spec"] for r in js["spec"]["replicatedJobs"]
    ]
    assert all(not p.get("metadata") for p in pods)
    assert not ADAPTER.is_stopping(ObjectView.of(back))


def test_admission_mismatch_sees_a_grown_replicated_job() -> None:
    js = make_jobset(("w", 1, 1, 1))
    admission = {"podSetAssignments": [{"name": "w", "count": 1, "resourceUsage": {"cpu": "1"}}]}
    workload = {
        "spec": {"podSets": ADAPTER.pod_sets(ObjectView.of(js), PodDefaults())},
        "status": {"admission": admission},
    }
    assert ADAPTER.admission_mismatch(ObjectView.of(js), WorkloadRecord.of(workload), PodDefaults()) is None
    grown = make_jobset(("w", 2, 1, 1))
    assert "runs 2 pods" in str(
        ADAPTER.admission_mismatch(ObjectView.of(grown), WorkloadRecord.of(workload), PodDefaults())
    )


@pytest.mark.parametrize(
    ("conditions", "done", "succeeded"),
    [
        pytest.param([], False, False, id="running"),
        pytest.param([{"type": "Completed", "status": "True"}], True, True, id="completed"),
        pytest.param([{"type": "Failed", "status": "True", "message": "boom"}], True, False, id="failed"),
        pytest.param([{"type": "Completed", "status": "False"}], False, False, id="not-yet"),
    ],
)
def test_finished_follows_the_jobset_conditions(conditions: list[JSON], done: bool, succeeded: bool) -> None:
    js = make_jobset(("w", 1, 1, 1)) | {"status": {"conditions": conditions}}
    finish = ADAPTER.finished(ObjectView.of(js))
    assert (finish.done, finish.succeeded) == (done, succeeded)


def test_pods_ready_when_every_replica_is_ready_or_succeeded() -> None:
    js = make_jobset(("a", 1, 1, 1), ("b", 2, 1, 1))
    partly = js | {"status": {"replicatedJobsStatus": [{"name": "a", "ready": 1}, {"name": "b", "ready": 1}]}}
    assert not ADAPTER.pods_ready(ObjectView.of(partly))
    whole = js | {
        "status": {"replicatedJobsStatus": [{"name": "a", "succeeded": 1}, {"name": "b", "ready": 1, "succeeded": 1}]}
    }
    assert ADAPTER.pods_ready(ObjectView.of(whole))


def test_replicated_jobs_need_distinct_names() -> None:
    assert ADAPTER.create_problems(ObjectView.of(make_jobset(("a", 1, 1, 1), ("a", 1, 1, 1))), managed=True)
    assert ADAPTER.create_problems(ObjectView.of(make_jobset(("a", 1, 1, 1), ("b", 1, 1, 1))), managed=True) == []
