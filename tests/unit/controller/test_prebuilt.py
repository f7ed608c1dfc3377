"""A job naming a prebuilt Workload (kueue.x-k8s.io/prebuilt-workload-name) uses that one, as Kueue does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_job
from webhook.api import conditions
from webhook.api.views import BatchJob
from webhook.controller.events import EventRecorder
from webhook.controller.jobsync import JobSync
from webhook.controller.watches import build_cache
from webhook.jobs import batch_job
from webhook.kube import resources as r

NOW = datetime(2025, 1, 1, tzinfo=UTC)
PREBUILT = {"kueue.x-k8s.io/prebuilt-workload-name": "mine"}


def prebuilt_workload(job: dict[str, Any], *, cpu: str = "1") -> dict[str, Any]:
    """What a user writes: a Workload with the job's pod set, no owner."""
    body = batch_job.workload_for(BatchJob.of(make_job("train", cpu=cpu) | {"metadata": job["metadata"]}), priority=0)
    meta = body["metadata"]
    meta["name"] = "mine"
    del meta["ownerReferences"], meta["labels"]
    return body


async def _setup() -> tuple[FakeKube, JobSync, dict[str, Any]]:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    job = await kube.create(r.JOB, make_job("train", labels=PREBUILT))
    cache.replace(r.JOB, kube.objects(r.JOB))
    return kube, sync, job


async def test_no_workload_is_created_while_the_prebuilt_one_does_not_exist() -> None:
    kube, sync, job = await _setup()
    await sync.sync(sync.view.of(job), NOW)
    assert kube.objects(r.WORKLOAD) == []


async def test_the_prebuilt_workload_becomes_the_jobs_own() -> None:
    kube, sync, job = await _setup()
    await kube.create(r.WORKLOAD, prebuilt_workload(job))
    sync._cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(job), NOW)
    [workload] = kube.objects(r.WORKLOAD)
    assert workload["metadata"]["name"] == "mine"
    [owner] = workload["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Job", job["metadata"]["uid"], True)
    assert workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == job["metadata"]["uid"]
    assert not conditions.is_true(workload, "Finished")


async def test_a_prebuilt_workload_out_of_sync_with_its_job_is_finished() -> None:
    kube, sync, job = await _setup()
    await kube.create(r.WORKLOAD, prebuilt_workload(job, cpu="3"))
    sync._cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(job), NOW)
    [workload] = kube.objects(r.WORKLOAD)
    finished = conditions.find(workload["status"]["conditions"], "Finished")
    assert finished is not None
    assert (finished["status"], finished["reason"]) == ("True", "OutOfSync")


async def test_a_prebuilt_workload_another_object_controls_is_left_alone() -> None:
    kube, sync, job = await _setup()
    body = prebuilt_workload(job)
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "other", "uid": "someone-else", "controller": True}
    ]
    before = await kube.create(r.WORKLOAD, body)
    sync._cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(job), NOW)
    assert kube.objects(r.WORKLOAD) == [before]
