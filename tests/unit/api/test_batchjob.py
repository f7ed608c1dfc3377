"""The batch/v1 Job view: counts and states read from spec and status as the Job controller reports them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.jobs.builders import make_job
from webhook.api.batchjob import BatchJob


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"),
    [
        pytest.param(None, None, 1, id="parallelism-defaults-to-one"),
        pytest.param(3, None, 3, id="parallelism"),
        pytest.param(3, 2, 2, id="capped-by-completions"),
        pytest.param(0, None, 0, id="zero-is-not-missing"),
    ],
)
def test_pod_count(parallelism: int | None, completions: int | None, count: int) -> None:
    assert BatchJob.of(make_job(parallelism=parallelism, completions=completions)).pod_count == count


def test_status_counts_default_to_zero() -> None:
    job = BatchJob.of(make_job())
    assert (job.active, job.ready, job.succeeded, job.uncounted_succeeded, job.started) == (0, 0, 0, 0, False)


def test_status_counts() -> None:
    status: dict[str, Any] = {
        "active": 2,
        "ready": 1,
        "succeeded": 3,
        "startTime": "2026-01-01T00:00:00Z",
        "uncountedTerminatedPods": {"succeeded": ["a", "b"], "failed": ["c"]},
    }
    job = BatchJob.of(make_job() | {"status": status})
    assert (job.active, job.ready, job.succeeded, job.uncounted_succeeded, job.started) == (2, 1, 3, 2, True)


@pytest.mark.parametrize(
    ("conditions", "suspended"),
    [
        pytest.param([], False, id="none"),
        pytest.param([{"type": "Suspended", "status": "False"}], False, id="false"),
        pytest.param([{"type": "Complete", "status": "True"}], False, id="another-type"),
        pytest.param(
            [{"type": "Suspended", "status": "False"}, {"type": "Suspended", "status": "True"}], True, id="any"
        ),
    ],
)
def test_has_condition(conditions: list[dict[str, str]], suspended: bool) -> None:
    assert BatchJob.of(make_job() | {"status": {"conditions": conditions}}).has_condition("Suspended") is suspended


def test_suspend_and_template() -> None:
    job = BatchJob.of(make_job(suspend=True, template_labels={"app": "x"}))
    assert job.suspend
    assert not BatchJob.of(make_job(suspend=False)).suspend
    assert job.template.labels == {"app": "x"}
    assert job.template.raw is job.raw["spec"]["template"]
