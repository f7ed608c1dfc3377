"""JobSync against the in-memory fake: stopping an evicted Job in the order the real API server requires."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_admission, make_flavor, make_job
from webhook.api.views import BatchJob, ObjectView, WorkloadRecord
from webhook.controller.events import EventRecorder
from webhook.controller.jobsync import JobSync
from webhook.controller.watches import build_cache, resource_of, watch_specs
from webhook.jobs import batch_job, registry
from webhook.jobs import workload as wl_life
from webhook.jobs.podset import podset_infos
from webhook.kube import resources as r

NOW = datetime(2025, 1, 1, tzinfo=UTC)


async def test_an_evicted_job_is_restored_only_after_its_pods_are_gone_and_then_gives_quota_back() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    flavor = await kube.create(r.RESOURCE_FLAVOR, make_flavor("spot", node_labels={"pool": "spot"}))
    original = await kube.create(r.JOB, make_job("train", parallelism=2))
    workload = await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(original), priority=0))
    admission = make_admission(main={"cpu": "spot"})
    workload = await kube.replace_status(r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(workload), admission, now=NOW))
    infos = podset_infos(WorkloadRecord.of(workload), {"spot": ObjectView.of(flavor)})
    running = batch_job.released(BatchJob.of(original), infos)
    running = await kube.replace(r.JOB, running)
    running = await kube.patch_status(
        r.JOB, "train", {"status": {"active": 2, "startTime": "2025-01-01T00:00:00Z"}}, namespace="team-a"
    )
    workload = await kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Preempted", message="preempted", now=NOW)
    )
    cache.replace(r.RESOURCE_FLAVOR, kube.objects(r.RESOURCE_FLAVOR))
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    # 1. Suspended and marked as stopping; the template keeps the flavor while the pods are still active.
    await sync.sync(sync.view.of(running), NOW)
    stopping = await kube.get(r.JOB, "train", namespace="team-a")
    assert stopping["spec"]["suspend"] is True
    assert batch_job.is_stopping(BatchJob.of(stopping))
    assert "startTime" not in stopping["status"]
    assert stopping["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    await sync.sync(sync.view.of(stopping), NOW)
    assert batch_job.is_stopping(BatchJob.of(await kube.get(r.JOB, "train", namespace="team-a")))
    assert WorkloadRecord.of(await kube.get(r.WORKLOAD, workload["metadata"]["name"], namespace="team-a")).holds_quota

    # 2. The Job controller removes the pods: the template is restored, the quota still held.
    gone = await kube.patch_status(r.JOB, "train", {"status": {"active": 0}}, namespace="team-a")
    await sync.sync(sync.view.of(gone), NOW)
    restored = await kube.get(r.JOB, "train", namespace="team-a")
    assert not batch_job.is_stopping(BatchJob.of(restored))
    assert restored["spec"]["template"] == original["spec"]["template"]
    assert WorkloadRecord.of(await kube.get(r.WORKLOAD, workload["metadata"]["name"], namespace="team-a")).holds_quota

    # 3. Only then does the Workload give its quota back.
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(restored), NOW)
    assert not WorkloadRecord.of(
        await kube.get(r.WORKLOAD, workload["metadata"]["name"], namespace="team-a")
    ).holds_quota


def admitted_for(workload: dict[str, Any], *, count: int, cpu_total: str) -> dict[str, Any]:
    admission = {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "count": count, "flavors": {"cpu": "spot"}, "resourceUsage": {"cpu": cpu_total}}
        ],
    }
    return wl_life.admitted(WorkloadRecord.of(workload), admission, now=NOW)


async def running_job(kube: FakeKube, cache: Any, *, parallelism: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Job admitted for 2 pods of 1 CPU and running; returns (job, workload) as stored."""
    flavor = await kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    job = await kube.create(r.JOB, make_job("train", parallelism=2))
    workload = await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0))
    workload = await kube.replace_status(r.WORKLOAD, admitted_for(workload, count=2, cpu_total="2"))
    infos = podset_infos(WorkloadRecord.of(workload), {"spot": ObjectView.of(flavor)})
    job = await kube.replace(r.JOB, batch_job.released(BatchJob.of(job), infos))
    job["spec"]["parallelism"] = parallelism
    job = await kube.replace(r.JOB, job)
    job = await kube.patch_status(
        r.JOB, "train", {"status": {"active": parallelism, "startTime": "2025-01-01T00:00:00Z"}}, namespace="team-a"
    )
    for resource in (r.RESOURCE_FLAVOR, r.WORKLOAD, r.JOB):
        cache.replace(resource, kube.objects(resource))
    return job, workload


async def test_a_job_that_outgrew_its_admission_is_stopped_and_queued_again_holding_quota_until_stopped() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    job, workload = await running_job(kube, cache, parallelism=6)
    name = workload["metadata"]["name"]

    # 1. Six pods on an admission for two: stopped, its Workload discarded but kept (finalizer) with its quota.
    await sync.sync(sync.view.of(job), NOW)
    stopping = await kube.get(r.JOB, "train", namespace="team-a")
    assert stopping["spec"]["suspend"] is True
    discarded = await kube.get(r.WORKLOAD, name, namespace="team-a")
    assert discarded["metadata"]["deletionTimestamp"]
    assert WorkloadRecord.of(discarded).holds_quota

    # 2. While pods remain, the Workload stays.
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(stopping), NOW)
    assert (await kube.get(r.WORKLOAD, name, namespace="team-a"))["metadata"]["finalizers"]

    # 3. Pods gone: restored, then the finalizer goes and a new Workload for six pods is queued.
    gone = await kube.patch_status(r.JOB, "train", {"status": {"active": 0}}, namespace="team-a")
    await sync.sync(sync.view.of(gone), NOW)
    restored = await kube.get(r.JOB, "train", namespace="team-a")
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(restored), NOW)
    assert kube.objects(r.WORKLOAD) == []
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(restored), NOW)
    (fresh,) = kube.objects(r.WORKLOAD)
    assert fresh["spec"]["podSets"][0]["count"] == 6
    assert not WorkloadRecord.of(fresh).holds_quota
    assert fresh["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]


async def test_a_job_within_its_admission_keeps_running() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    job, workload = await running_job(kube, cache, parallelism=1)
    await sync.sync(sync.view.of(job), NOW)
    assert (await kube.get(r.JOB, "train", namespace="team-a"))["spec"]["suspend"] is False
    assert (
        "deletionTimestamp"
        not in (await kube.get(r.WORKLOAD, workload["metadata"]["name"], namespace="team-a"))["metadata"]
    )


async def test_deleting_the_workload_of_a_running_job_stops_it_before_the_quota_goes() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    job, workload = await running_job(kube, cache, parallelism=2)
    name = workload["metadata"]["name"]
    await kube.delete(r.WORKLOAD, name, namespace="team-a")
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    await sync.sync(sync.view.of(job), NOW)
    stopping = await kube.get(r.JOB, "train", namespace="team-a")
    assert stopping["spec"]["suspend"] is True
    assert WorkloadRecord.of(await kube.get(r.WORKLOAD, name, namespace="team-a")).holds_quota

    gone = await kube.patch_status(r.JOB, "train", {"status": {"active": 0}}, namespace="team-a")
    await sync.sync(sync.view.of(gone), NOW)  # restores the template
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await sync.sync(sync.view.of(await kube.get(r.JOB, "train", namespace="team-a")), NOW)
    assert kube.objects(r.WORKLOAD) == []


async def test_limit_range_defaults_are_in_the_workload() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    limit_range = {
        "metadata": {"name": "defaults", "namespace": "team-a"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "2"}, "defaultRequest": {"cpu": "1"}}]},
    }
    await kube.create(r.LIMIT_RANGE, limit_range)
    cache.replace(r.LIMIT_RANGE, kube.objects(r.LIMIT_RANGE))
    bare = make_job("train")
    del bare["spec"]["template"]["spec"]["containers"][0]["resources"]
    job = await kube.create(r.JOB, bare)
    await sync.sync(sync.view.of(job), NOW)
    (workload,) = kube.objects(r.WORKLOAD)
    container = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}


async def test_a_changed_priority_class_label_changes_the_workload_priority() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    for name, value in (("low", 10), ("high", 1000)):
        await kube.create(r.WORKLOAD_PRIORITY_CLASS, {"metadata": {"name": name}, "value": value})
    cache.replace(r.WORKLOAD_PRIORITY_CLASS, kube.objects(r.WORKLOAD_PRIORITY_CLASS))
    job = await kube.create(r.JOB, make_job("train", labels={"kueue.x-k8s.io/priority-class": "low"}))
    await sync.sync(sync.view.of(job), NOW)
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    (workload,) = kube.objects(r.WORKLOAD)
    assert (workload["spec"]["priority"], workload["spec"]["priorityClassRef"]["name"]) == (10, "low")

    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    job = await kube.replace(r.JOB, job)
    await sync.sync(sync.view.of(job), NOW)
    (workload,) = kube.objects(r.WORKLOAD)
    assert (workload["spec"]["priority"], workload["spec"]["priorityClassRef"]["name"]) == (1000, "high")


async def test_an_unlabelled_job_that_slipped_past_the_webhook_is_suspended_and_queued() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    await kube.create(
        r.LOCAL_QUEUE, {"metadata": {"name": "default", "namespace": "team-a"}, "spec": {"clusterQueue": "cq"}}
    )
    cache.replace(r.LOCAL_QUEUE, kube.objects(r.LOCAL_QUEUE))
    job = await kube.create(r.JOB, make_job("slipped", queue=None, suspend=False))
    await sync.sync(sync.view.of(job), NOW)
    adopted = await kube.get(r.JOB, "slipped", namespace="team-a")
    assert adopted["spec"]["suspend"] is True
    assert adopted["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    await sync.sync(sync.view.of(adopted), NOW)
    assert len(kube.objects(r.WORKLOAD)) == 1


async def test_an_unlabelled_job_older_than_the_default_queue_is_left_alone() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    sync = JobSync(kube, cache, events=EventRecorder(kube))
    job = await kube.create(r.JOB, make_job("old", queue=None, suspend=False))
    job["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    lq = {
        "metadata": {"name": "default", "namespace": "team-a", "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"clusterQueue": "cq"},
    }
    cache.replace(r.LOCAL_QUEUE, [lq])
    await sync.sync(sync.view.of(job), NOW)
    assert (await kube.get(r.JOB, "old", namespace="team-a"))["spec"]["suspend"] is False


async def test_a_job_whose_controller_reference_names_a_jobset_that_does_not_exist_is_queued_itself() -> None:
    # An ordinary user writes the ownerReference: a made-up managed parent must not exempt the Job from quota.
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache(watch_specs({"batch/job", "jobset.x-k8s.io/jobset"}))
    sync = JobSync(kube, cache, events=EventRecorder(kube), frameworks=frozenset({"jobset.x-k8s.io/jobset"}))
    fake_parent = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "nowhere",
        "uid": "uid-not-a-jobset",
        "controller": True,
    }
    body = make_job("escape", suspend=False)
    body["metadata"]["ownerReferences"] = [fake_parent]
    job = await kube.create(r.JOB, body)

    await sync.sync(sync.view.of(job), NOW)  # first pass: its own Workload
    assert len(kube.objects(r.WORKLOAD)) == 1
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    escaping = await kube.get(r.JOB, "escape", namespace="team-a")
    await sync.sync(sync.view.of(escaping), NOW)  # next: stopped, not admitted

    stopped = await kube.get(r.JOB, "escape", namespace="team-a")
    assert stopped["spec"]["suspend"] is True, "running without an admitted Workload: suspended"


async def test_a_job_of_an_existing_managed_jobset_is_left_to_its_parent() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache(watch_specs({"batch/job", "jobset.x-k8s.io/jobset"}))
    sync = JobSync(kube, cache, events=EventRecorder(kube), frameworks=frozenset({"jobset.x-k8s.io/jobset"}))
    jobsets = resource_of(registry.by_kind("jobset.x-k8s.io", "JobSet", {"jobset.x-k8s.io/jobset"}))  # type: ignore[arg-type]
    parent = {"metadata": {"name": "js", "namespace": "team-a", "uid": "uid-js"}, "spec": {"replicatedJobs": []}}
    cache.replace(jobsets, [parent])
    body = make_job("child", queue=None, suspend=False)
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "uid-js", "controller": True}
    ]
    job = await kube.create(r.JOB, body)

    await sync.sync(sync.view.of(job), NOW)

    assert (await kube.get(r.JOB, "child", namespace="team-a"))["spec"]["suspend"] is False
    assert kube.objects(r.WORKLOAD) == []
