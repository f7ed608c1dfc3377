"""The batch/v1 Job adapter: Job -> Workload, release and stop."""

from __future__ import annotations

import pytest

from tests.unit.jobs.builders import admitted_with, flavor_views, make_admission, make_flavor, make_job
from webhook.api.views import BatchJob, WorkloadRecord
from webhook.jobs import batch_job
from webhook.jobs.naming import job_workload_name, workload_name
from webhook.jobs.podset import podset_infos


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"),
    [
        pytest.param(None, None, 1, id="defaults-to-one"),
        pytest.param(4, None, 4, id="parallelism-only"),
        pytest.param(4, 2, 2, id="capped-by-completions"),
        pytest.param(2, 10, 2, id="parallelism-below-completions"),
    ],
)
def test_pod_count(parallelism: int | None, completions: int | None, count: int) -> None:
    assert batch_job.pod_count(BatchJob.of(make_job(parallelism=parallelism, completions=completions))) == count


def test_workload_for_job() -> None:
    job = make_job(
        parallelism=3,
        template_labels={"app": "x", "batch.kubernetes.io/controller-uid": "u"},
        labels={"kueue.x-k8s.io/max-exec-time-seconds": "600"},
        annotations={"kueue.x-k8s.io/job-min-parallelism": "2"},
    )
    wl = batch_job.workload_for(
        BatchJob.of(job),
        priority=100,
        priority_class_name="high",
        priority_class_source="kueue.x-k8s.io/workloadpriorityclass",
    )
    assert wl["metadata"]["name"] == job_workload_name("team-a", "sample")
    assert wl["metadata"]["ownerReferences"][0] | {} == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "sample",
        "uid": "uid-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    spec = wl["spec"]
    assert spec["queueName"] == "user-queue"
    assert spec["priority"] == 100
    assert spec["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert spec["maximumExecutionTimeSeconds"] == 600
    (podset,) = spec["podSets"]
    assert (podset["name"], podset["count"], podset["minCount"]) == ("main", 3, 2)
    assert podset["template"]["metadata"]["labels"] == {"app": "x"}


def test_workload_names_are_stable_valid_and_distinct() -> None:
    name = job_workload_name("team-a", "sample")
    assert name == job_workload_name("team-a", "sample")
    assert name.startswith("job-sample-")
    assert len(name) == len("job-sample-") + 5
    assert name != job_workload_name("team-b", "sample")
    long = workload_name(kind="Job", group="batch", namespace="n", name="x" * 253)
    assert len(long) <= 253


def test_matches_workload_detects_a_changed_job() -> None:
    job = make_job(parallelism=2)
    wl = batch_job.workload_for(BatchJob.of(job), priority=0)
    assert batch_job.matches_workload(BatchJob.of(job), WorkloadRecord.of(wl))
    assert not batch_job.matches_workload(BatchJob.of(make_job(parallelism=3)), WorkloadRecord.of(wl))
    assert not batch_job.matches_workload(BatchJob.of(make_job(parallelism=2, cpu="2")), WorkloadRecord.of(wl))
    assert not batch_job.matches_workload(BatchJob.of(make_job(parallelism=2, uid="other")), WorkloadRecord.of(wl))


def test_release_injects_flavor_and_unsuspends_then_stop_restores() -> None:
    job = make_job(parallelism=4)
    wl = batch_job.workload_for(BatchJob.of(job), priority=0)
    flavors = flavor_views(make_flavor("spot", node_labels={"instance": "spot"}))
    infos = podset_infos(admitted_with(make_admission(main={"cpu": "spot"})), flavors)
    running = batch_job.released(BatchJob.of(job), infos, admitted_count=3)
    assert running["spec"]["suspend"] is False
    assert running["spec"]["parallelism"] == 3
    assert running["spec"]["template"]["spec"]["nodeSelector"] == {"instance": "spot"}
    assert job["spec"]["suspend"] is True, "the input is not modified"

    stopping = batch_job.suspended(BatchJob.of(running))
    assert stopping["spec"]["suspend"] is True
    assert stopping["metadata"]["annotations"]["kueue.x-k8s.io/stopping"] == "true"
    back = batch_job.restored(BatchJob.of(stopping), WorkloadRecord.of(wl))
    assert back["spec"]["template"] == job["spec"]["template"]
    assert back["spec"]["parallelism"] == 4
    assert "annotations" not in back["metadata"]


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param([], (False, False, ""), id="running"),
        pytest.param(
            [{"type": "Complete", "status": "True"}], (True, True, "Job finished successfully"), id="complete"
        ),
        pytest.param(
            [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}],
            (True, False, "BackoffLimitExceeded"),
            id="failed",
        ),
        pytest.param([{"type": "Failed", "status": "False"}], (False, False, ""), id="condition-false"),
    ],
)
def test_finished(conditions: list[dict[str, str]], expected: tuple[bool, bool, str]) -> None:
    job = make_job()
    job["status"] = {"conditions": conditions}
    assert batch_job.finished(BatchJob.of(job)) == expected


@pytest.mark.parametrize(
    ("suspend", "status", "mutable"),
    [
        pytest.param(True, {}, True, id="never-started"),
        pytest.param(False, {}, False, id="running"),
        pytest.param(True, {"active": 2}, False, id="pods-still-active"),
        pytest.param(True, {"startTime": "2025-01-01T00:00:00Z"}, False, id="started-not-yet-marked-suspended"),
        pytest.param(
            True,
            {"startTime": "2025-01-01T00:00:00Z", "conditions": [{"type": "Suspended", "status": "True"}]},
            True,
            id="marked-suspended-by-the-job-controller",
        ),
    ],
)
def test_template_mutable(suspend: bool, status: dict[str, object], mutable: bool) -> None:
    assert batch_job.template_mutable(BatchJob.of(make_job(suspend=suspend) | {"status": status})) is mutable


def test_stopping_lasts_from_suspend_to_restore() -> None:
    job = make_job(suspend=False)
    stopping = batch_job.suspended(BatchJob.of(job))
    assert batch_job.is_stopping(BatchJob.of(stopping))
    assert not batch_job.is_stopping(
        BatchJob.of(
            batch_job.restored(
                BatchJob.of(stopping), WorkloadRecord.of({"spec": {"podSets": batch_job.podsets(BatchJob.of(job))}})
            )
        )
    )


@pytest.mark.parametrize(
    ("status", "ready"),
    [
        pytest.param({"ready": 3}, True, id="all-ready"),
        pytest.param({"ready": 2}, False, id="one-not-ready"),
        pytest.param({"ready": 1, "succeeded": 2}, True, id="ready-or-succeeded"),
        # Between the Job controller's two writes as pods end: no longer ready, not yet counted as succeeded.
        pytest.param({"ready": 0, "uncountedTerminatedPods": {"succeeded": ["a", "b", "c"]}}, True, id="uncounted"),
        pytest.param({"ready": 0, "uncountedTerminatedPods": {"failed": ["a", "b", "c"]}}, False, id="failed"),
    ],
)
def test_pods_ready(status: dict[str, object], ready: bool) -> None:
    job = make_job(parallelism=3) | {"status": status}
    assert batch_job.pods_ready(BatchJob.of(job)) is ready
