"""The state machine every kind shares: one table of (Workload, job) situations and the step each calls for."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.jobs.builders import make_admission
from webhook.api.views import WorkloadRecord
from webhook.jobs import workload as wl_life
from webhook.jobs.steps import JobState, Step, next_step

NOW = datetime(2025, 1, 1, tzinfo=UTC)
PENDING: dict[str, Any] = {"metadata": {"name": "w"}, "spec": {}, "status": {}}
ADMITTED = wl_life.admitted(WorkloadRecord.of(PENDING), make_admission(main={"cpu": "f"}), now=NOW)
EVICTED = wl_life.evicted(WorkloadRecord.of(ADMITTED), reason="Preempted", message="preempted", now=NOW)
GIVEN_BACK = wl_life.released(WorkloadRecord.of(EVICTED), now=NOW)
FINISHED = wl_life.finished(WorkloadRecord.of(ADMITTED), succeeded=True, message="done", now=NOW)

SUSPENDED = JobState(done=False, waiting=True, running=False, active_pods=False)
RUNNING = JobState(done=False, waiting=False, running=True, active_pods=True)
DRAINING = JobState(done=False, waiting=True, running=False, active_pods=True)  # stopped, pods still going
STOPPING = JobState(done=False, waiting=True, running=False, active_pods=True, stopping=True)
ENDED = JobState(done=True, waiting=False, running=False, active_pods=False)
PARTLY = JobState(done=False, waiting=True, running=True, active_pods=True)  # a group: some pods out, some gated


@pytest.mark.parametrize(
    ("workload", "job", "step"),
    [
        pytest.param(PENDING, SUSPENDED, Step.WAIT, id="queued"),
        pytest.param(PENDING, RUNNING, Step.STOP, id="running-unadmitted"),
        pytest.param(ADMITTED, SUSPENDED, Step.RELEASE, id="admitted"),
        pytest.param(ADMITTED, PARTLY, Step.RELEASE, id="admitted-partly-released"),
        pytest.param(ADMITTED, RUNNING, Step.TRACK, id="admitted-running"),
        pytest.param(EVICTED, RUNNING, Step.STOP, id="evicted-running"),
        pytest.param(EVICTED, DRAINING, Step.WAIT, id="evicted-pods-going"),
        pytest.param(EVICTED, SUSPENDED, Step.GIVE_BACK, id="evicted-stopped"),
        pytest.param(GIVEN_BACK, SUSPENDED, Step.WAIT, id="requeued"),
        pytest.param(EVICTED, STOPPING, Step.RESTORE, id="stopping"),
        pytest.param(ADMITTED, ENDED, Step.FINISH, id="ended"),
        pytest.param(FINISHED, ENDED, Step.FINISH, id="ended-and-finished"),
        pytest.param(FINISHED, RUNNING, Step.CLOSED, id="finished"),
    ],
)
def test_the_next_step(workload: dict[str, Any], job: JobState, step: Step) -> None:
    assert next_step(WorkloadRecord.of(workload), job) is step
