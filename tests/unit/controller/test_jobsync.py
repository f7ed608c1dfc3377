"""JobSync against the in-memory fake: stopping an evicted Job in the order the real API server requires."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.unit.jobs.builders import make_admission, make_flavor, make_job
from webhook.controller.events import EventRecorder
from webhook.controller.jobsync import JobSync
from webhook.controller.watches import build_cache
from webhook.jobs import batch_job
from webhook.jobs import workload as wl_life
from webhook.jobs.podset import podset_infos
from webhook.kube import resources as r
from webhook.kube.fake import FakeKube

NOW = datetime(2025, 1, 1, tzinfo=UTC)


async def test_an_evicted_job_is_restored_only_after_its_pods_are_gone_and_then_gives_quota_back() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    flavor = await kube.create(r.RESOURCE_FLAVOR, make_flavor("spot", node_labels={"pool": "spot"}))
    original = await kube.create(r.JOB, make_job("train", parallelism=2))
    workload = await kube.create(r.WORKLOAD, batch_job.workload_for(original, priority=0))
    admission = make_admission(main={"cpu": "spot"})
    workload = await kube.replace_status(r.WORKLOAD, wl_life.admitted(workload, admission, now=NOW))
    running = batch_job.released(original, podset_infos(admission, {"spot": flavor}))
    running = await kube.replace(r.JOB, running)
    running = await kube.patch_status(
        r.JOB, "train", {"status": {"active": 2, "startTime": "2025-01-01T00:00:00Z"}}, namespace="team-a"
    )
    workload = await kube.replace_status(
        r.WORKLOAD, wl_life.evicted(workload, reason="Preempted", message="preempted", now=NOW)
    )
    cache.replace(r.RESOURCE_FLAVOR, kube.objects(r.RESOURCE_FLAVOR))
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    # 1. Suspended and marked as stopping; the template keeps the flavor while the pods are still active.
    await sync.sync(running, NOW)
    stopping = await kube.get(r.JOB, "train", namespace="team-a")
    assert stopping["spec"]["suspend"] is True
    assert batch_job.is_stopping(stopping)
    assert "startTime" not in stopping["status"]
    assert stopping["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    await sync.sync(stopping, NOW)
    assert batch_job.is_stopping(await kube.get(r.JOB, "train", namespace="team-a"))
    assert wl_life.holds_quota(await kube.get(r.WORKLOAD, workload["metadata"]["name"], namespace="team-a"))

    # 2. The Job controller removes the pods: the template is restored, the quota still held.
    gone = await kube.patch_status(r.JOB, "train", {"status": {"active": 0}}, namespace="team-a")
    await sync.sync(gone, NOW)
    restored = await kube.get(r.JOB, "train", namespace="team-a")
    assert not batch_job.is_stopping(restored)
    assert restored["spec"]["template"] == original["spec"]["template"]
    assert wl_life.holds_quota(await kube.get(r.WORKLOAD, workload["metadata"]["name"], namespace="team-a"))

    # 3. Only then does the Workload give its quota back.
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(restored, NOW)
    assert not wl_life.holds_quota(await kube.get(r.WORKLOAD, workload["metadata"]["name"], namespace="team-a"))
