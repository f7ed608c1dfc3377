"""The one state machine both job reconcilers run (suspend as a whole, gate per pod): each step calls the
mechanism's part once and writes what all kinds share, against the in-memory fake."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_admission, make_flavor
from webhook.api import conditions
from webhook.api import constants as c
from webhook.api.views import ObjectView, WorkloadRecord
from webhook.controller.events import EventRecorder
from webhook.controller.statemachine import StateMachine
from webhook.controller.watches import build_cache
from webhook.jobs import workload as wl_life
from webhook.jobs.adapter import Finish
from webhook.jobs.podset import PodSetInfo, PodSetMergeError
from webhook.jobs.steps import JobState
from webhook.kube import resources as r

NOW = datetime(2025, 1, 1, tzinfo=UTC)
NS = "team-a"
IDLE = JobState(done=False, waiting=False, running=False, active_pods=False)


class Recorder:
    """A mechanism that records which of its parts the state machine called."""

    def __init__(self, state: JobState, *, fits: bool = True, merge_error: bool = False, ready: bool = False) -> None:
        self.state = state
        self.subjects: Sequence[ObjectView] = (
            ObjectView.of({"metadata": {"name": "job", "namespace": NS, "uid": "job-uid"}}),
        )
        self.calls: list[str] = []
        self.infos: Mapping[str, PodSetInfo] = {}
        self._fits, self._merge_error, self._ready = fits, merge_error, ready

    def ended(self) -> Finish:
        return Finish(done=True, succeeded=True, message="all done")

    async def let_go(self, workload: WorkloadRecord) -> None:
        self.calls.append("let_go")

    async def restore(self, workload: WorkloadRecord) -> None:
        self.calls.append("restore")

    async def fits(self, workload: WorkloadRecord, now: datetime) -> bool:
        self.calls.append("fits")
        return self._fits

    async def release(self, workload: WorkloadRecord, infos: Mapping[str, PodSetInfo], now: datetime) -> None:
        self.calls.append("release")
        self.infos = infos
        if self._merge_error:
            raise PodSetMergeError("nodeSelector pool='a' conflicts with the admitted flavor's 'spot'")

    def pods_ready(self, workload: WorkloadRecord) -> bool:
        self.calls.append("pods_ready")
        return self._ready

    async def stop(self, workload: WorkloadRecord, now: datetime) -> None:
        self.calls.append("stop")


async def setup(status: str) -> tuple[FakeKube, StateMachine, WorkloadRecord]:
    """A Workload that is ``pending``, ``admitted``, ``evicted`` (still holding quota) or ``finished``."""
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    await kube.create(r.RESOURCE_FLAVOR, make_flavor("spot", node_labels={"pool": "spot"}))
    cache.replace(r.RESOURCE_FLAVOR, kube.objects(r.RESOURCE_FLAVOR))
    body: dict[str, Any] = {
        "apiVersion": c.API_VERSION,
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": NS},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}]},
    }
    workload = await kube.create(r.WORKLOAD, body)
    if status in ("admitted", "evicted", "finished"):
        admission = make_admission(main={"cpu": "spot"})
        workload = await kube.replace_status(
            r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(workload), admission, now=NOW)
        )
    if status == "evicted":
        evicted = wl_life.evicted(WorkloadRecord.of(workload), reason="Preempted", message="preempted", now=NOW)
        workload = await kube.replace_status(r.WORKLOAD, evicted)
    if status == "finished":
        finished = wl_life.finished(WorkloadRecord.of(workload), succeeded=True, message="done", now=NOW)
        workload = await kube.replace_status(r.WORKLOAD, finished)
    machine = StateMachine(kube, cache, events=EventRecorder(kube), track_pods_ready=True)
    return kube, machine, WorkloadRecord.of(workload)


@pytest.mark.parametrize(
    ("status", "state", "calls"),
    [
        pytest.param("admitted", JobState(True, False, True, True), ["let_go"], id="ended-finishes-then-lets-go"),
        pytest.param("finished", IDLE, ["let_go"], id="finished-already-closed"),
        pytest.param(
            "evicted", JobState(False, True, False, False, stopping=True), ["restore"], id="stopping-restores"
        ),
        pytest.param("admitted", JobState(False, True, False, False), ["fits", "release"], id="admitted-releases"),
        pytest.param("admitted", JobState(False, False, True, True), ["fits", "pods_ready"], id="released-tracks"),
        pytest.param("pending", JobState(False, False, True, True), ["stop"], id="unadmitted-running-stops"),
        pytest.param("evicted", JobState(False, False, True, True), ["stop"], id="evicted-running-stops"),
        pytest.param("evicted", IDLE, [], id="evicted-stopped-gives-back"),
        pytest.param("pending", JobState(False, True, False, False), [], id="pending-waits"),
    ],
)
async def test_each_step_calls_the_mechanisms_part_once(status: str, state: JobState, calls: list[str]) -> None:
    _, machine, workload = await setup(status)
    job = Recorder(state)
    await machine.take_step(workload, job, NOW)
    assert job.calls == calls


async def test_finish_writes_the_finished_condition_once_with_the_jobs_message_and_tells_the_job() -> None:
    kube, machine, workload = await setup("admitted")
    job = Recorder(JobState(done=True, waiting=False, running=False, active_pods=False))
    await machine.take_step(workload, job, NOW)
    finished = conditions.find((await kube.get(r.WORKLOAD, "wl", namespace=NS))["status"]["conditions"], "Finished")
    assert finished is not None
    assert (finished["status"], finished["message"]) == ("True", "all done")
    assert [e["reason"] for e in kube.objects(r.EVENT)] == ["Finished"]


async def test_release_gets_the_admitted_flavors_and_a_conflict_fails_the_start() -> None:
    kube, machine, workload = await setup("admitted")
    job = Recorder(JobState(done=False, waiting=True, running=False, active_pods=False), merge_error=True)
    await machine.take_step(workload, job, NOW)
    assert job.infos["main"].node_selector == {"pool": "spot"}
    finished = conditions.find((await kube.get(r.WORKLOAD, "wl", namespace=NS))["status"]["conditions"], "Finished")
    assert finished is not None
    assert finished["reason"] == "FailedToStart"
    assert [e["reason"] for e in kube.objects(r.EVENT)] == ["FailedToStart"]


async def test_a_job_that_no_longer_fits_is_not_released() -> None:
    _, machine, workload = await setup("admitted")
    job = Recorder(JobState(done=False, waiting=True, running=False, active_pods=False), fits=False)
    await machine.take_step(workload, job, NOW)
    assert job.calls == ["fits"]


async def test_pods_ready_and_the_quota_given_back_are_written_to_the_workload() -> None:
    kube, machine, workload = await setup("admitted")
    await machine.take_step(workload, Recorder(JobState(False, False, True, True), ready=True), NOW)
    assert conditions.is_true(await kube.get(r.WORKLOAD, "wl", namespace=NS), c.COND_PODS_READY)
    kube, machine, workload = await setup("evicted")
    await machine.take_step(workload, Recorder(IDLE), NOW)
    released = await kube.get(r.WORKLOAD, "wl", namespace=NS)
    assert not WorkloadRecord.of(released).holds_quota
    assert conditions.is_true(released, c.COND_REQUEUED)
