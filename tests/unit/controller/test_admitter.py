"""The Admitter against the in-memory fake: what a pass writes for a workload that has to wait."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_flavor, make_job
from webhook.api import constants
from webhook.controller.admitter import Admitter
from webhook.controller.events import EventRecorder
from webhook.controller.watches import build_cache
from webhook.jobs import batch_job
from webhook.kube import resources as r

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def make_cluster_queue(name: str, *, flavor: str, cpu: str) -> dict[str, Any]:
    group = {
        "coveredResources": ["cpu"],
        "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
    }
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", "resourceGroups": [group]},
    }


def make_local_queue(namespace: str, name: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterQueue": cluster_queue},
    }


async def test_a_waiting_job_is_told_why_through_an_event_on_the_job() -> None:
    kube = FakeKube(clock=lambda: NOW)
    job = await kube.create(r.JOB, make_job("train", namespace="team-a", queue="q", parallelism=4))
    workload = batch_job.workload_for(job, priority=0)
    for resource, obj in (
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.CLUSTER_QUEUE, make_cluster_queue("cq", flavor="default", cpu="2")),
        (r.LOCAL_QUEUE, make_local_queue("team-a", "q", "cq")),
        (r.WORKLOAD, workload),
    ):
        await kube.create(resource, obj)
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE, r.WORKLOAD, r.JOB):
        cache.replace(resource, kube.objects(resource))

    await Admitter(kube, cache, events=EventRecorder(kube)).run_pass(NOW)

    pending = {
        (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["involvedObject"].get("uid")): e["message"]
        for e in kube.objects(r.EVENT)
        if e["reason"] == "Pending"
    }
    on_job = pending[("Job", "train", job["metadata"]["uid"])]
    assert "cpu in flavor default needs 4" in on_job
    (stored,) = kube.objects(r.WORKLOAD)
    assert pending[("Workload", stored["metadata"]["name"], stored["metadata"]["uid"])] == on_job


async def test_a_waiting_reason_whose_numbers_moved_is_rewritten_at_most_once_per_refresh() -> None:
    kube = FakeKube(clock=lambda: NOW)
    job = await kube.create(r.JOB, make_job("train", namespace="team-a", queue="q", parallelism=4))
    for resource, obj in (
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.CLUSTER_QUEUE, make_cluster_queue("cq", flavor="default", cpu="2")),
        (r.LOCAL_QUEUE, make_local_queue("team-a", "q", "cq")),
        (r.WORKLOAD, batch_job.workload_for(job, priority=0)),
    ):
        await kube.create(resource, obj)
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE, r.WORKLOAD, r.JOB):
        cache.replace(resource, kube.objects(resource))
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_refresh=timedelta(seconds=15))

    def message() -> str:
        (stored,) = kube.objects(r.WORKLOAD)
        return str(next(c["message"] for c in stored["status"]["conditions"] if c["type"] == "QuotaReserved"))

    async def grow_quota(cpu: str) -> None:
        (cq,) = kube.objects(r.CLUSTER_QUEUE)
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = cpu
        await kube.replace(r.CLUSTER_QUEUE, cq)
        cache.replace(r.CLUSTER_QUEUE, kube.objects(r.CLUSTER_QUEUE))

    await admitter.run_pass(NOW)
    assert "more than the 2 " in message()
    await grow_quota("3")
    await admitter.run_pass(NOW + timedelta(seconds=1))
    assert "more than the 2 " in message(), "same reason, new numbers, one second later: not worth a write"
    await admitter.run_pass(NOW + timedelta(seconds=16))
    assert "more than the 3 " in message(), "after the refresh interval the numbers are brought up to date"


async def test_a_queue_is_parsed_again_only_when_its_version_changes() -> None:
    kube = FakeKube(clock=lambda: NOW)
    for resource, obj in (
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.CLUSTER_QUEUE, make_cluster_queue("cq", flavor="default", cpu="2")),
        (r.LOCAL_QUEUE, make_local_queue("team-a", "q", "cq")),
    ):
        await kube.create(resource, obj)
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE):
        cache.replace(resource, kube.objects(resource))
    admitter = Admitter(kube, cache, events=EventRecorder(kube))

    first, again = admitter.snapshot(), admitter.snapshot()
    assert again.cluster_queues[0] is first.cluster_queues[0]  # the same version: not parsed again
    assert again.local_queues[0] is first.local_queues[0]

    (cq,) = kube.objects(r.CLUSTER_QUEUE)
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "5"
    cache.replace(r.CLUSTER_QUEUE, [await kube.replace(r.CLUSTER_QUEUE, cq)])
    changed = admitter.snapshot()
    assert changed.cluster_queues[0] is not first.cluster_queues[0]
    assert changed.cluster_queues[0] != first.cluster_queues[0]  # the new quota is what the scheduler sees

    cache.replace(r.CLUSTER_QUEUE, [])
    assert admitter.snapshot().cluster_queues == []  # a deleted queue is gone from the snapshot
