"""Queue status under fair sharing: weighted shares on ClusterQueues and Cohorts, cohort cycles, LocalQueue usage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.doubles.fakekube import FakeKube
from tests.unit.controller.test_admitter import make_cluster_queue, make_local_queue
from tests.unit.jobs.builders import make_flavor
from webhook.api import constants
from webhook.controller.admitter import Admitter
from webhook.controller.events import EventRecorder
from webhook.controller.queuestatus import QueueStatusWriter
from webhook.controller.watches import build_cache
from webhook.core.admissionfairsharing import AdmissionFairSharing
from webhook.core.fairsharing import FairSharing
from webhook.kube import resources as r
from webhook.metrics import Metrics

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def make_cohort(name: str, parent: str | None = None) -> dict[str, Any]:
    spec = {"parentName": parent} if parent else {}
    return {"apiVersion": constants.API_VERSION, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def make_workload(name: str, queue: str, cq: str | None, cpu: str) -> dict[str, Any]:
    wl: dict[str, Any] = {
        "apiVersion": constants.API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team", "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
                }
            ],
        },
    }
    if cq is not None:
        wl["status"] = {
            "admission": {
                "clusterQueue": cq,
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}, "count": 1}
                ],
            },
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
                {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
            ],
        }  # fmt: skip
    return wl


async def seeded(*objects: tuple[Any, dict[str, Any]]) -> tuple[FakeKube, Any]:
    kube = FakeKube(clock=lambda: NOW)
    for resource, obj in objects:
        await kube.create(resource, obj)
        if resource is r.WORKLOAD and "status" in obj:
            await kube.patch_status(resource, obj["metadata"]["name"], {"status": obj["status"]}, namespace="team")
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.COHORT, r.LOCAL_QUEUE, r.WORKLOAD):
        cache.replace(resource, kube.objects(resource))
    return kube, cache


async def test_weighted_shares_are_written_and_exported() -> None:
    borrower = make_cluster_queue("borrower", flavor="default", cpu="0") | {}
    borrower["spec"]["cohortName"] = "shared"
    lender = make_cluster_queue("lender", flavor="default", cpu="4")
    lender["spec"]["cohortName"] = "shared"
    kube, cache = await seeded(
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.COHORT, make_cohort("shared")),
        (r.CLUSTER_QUEUE, borrower),
        (r.CLUSTER_QUEUE, lender),
        (r.LOCAL_QUEUE, make_local_queue("team", "q", "borrower")),
        (r.WORKLOAD, make_workload("held", "q", "borrower", "1")),
    )
    metrics = Metrics()
    admitter = Admitter(kube, cache, events=EventRecorder(kube), fair_sharing=FairSharing(enabled=True))
    snapshot, result = await admitter.run_pass(NOW)
    await QueueStatusWriter(kube, cache, metrics=metrics).write(snapshot, NOW, result)

    cq = next(o for o in kube.objects(r.CLUSTER_QUEUE) if o["metadata"]["name"] == "borrower")
    assert cq["status"]["fairSharing"] == {"weightedShare": 250}  # 1 of the 4 the cohort could lend
    (cohort,) = kube.objects(r.COHORT)
    assert cohort["status"]["fairSharing"] == {"weightedShare": 0}
    text = metrics.registry.get_sample_value(
        "kueue_cluster_queue_weighted_share",
        {"cluster_queue": "borrower", "cohort": "shared", "replica_role": "standalone"},
    )
    assert text == 250
    assert (
        metrics.registry.get_sample_value(
            "kueue_cohort_weighted_share", {"cohort": "shared", "replica_role": "standalone"}
        )
        == 0
    )


async def test_a_queue_below_a_cohort_cycle_is_reported_inactive() -> None:
    cq = make_cluster_queue("looped", flavor="default", cpu="1")
    cq["spec"]["cohortName"] = "a"
    kube, cache = await seeded(
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.COHORT, make_cohort("a", "b")),
        (r.COHORT, make_cohort("b", "a")),
        (r.CLUSTER_QUEUE, cq),
    )
    snapshot, result = await Admitter(kube, cache, events=EventRecorder(kube)).run_pass(NOW)
    await QueueStatusWriter(kube, cache).write(snapshot, NOW, result)
    (written,) = kube.objects(r.CLUSTER_QUEUE)
    (active,) = [c for c in written["status"]["conditions"] if c["type"] == "Active"]
    assert (active["status"], active["reason"]) == ("False", "CohortHasCycle")
    assert "the parents of cohort a form a cycle (a -> b -> a)" in active["message"]


async def test_local_queue_usage_is_sampled_for_admission_fair_sharing() -> None:
    cq = make_cluster_queue("afs", flavor="default", cpu="4")
    cq["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    kube, cache = await seeded(
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.CLUSTER_QUEUE, cq),
        (r.LOCAL_QUEUE, make_local_queue("team", "q", "afs")),
        (r.WORKLOAD, make_workload("held", "q", "afs", "2")),
    )
    afs = AdmissionFairSharing(enabled=True, usage_half_life_seconds=600, usage_sampling_interval_seconds=60)
    writer = QueueStatusWriter(kube, cache, admission_fair_sharing=afs)
    admitter = Admitter(kube, cache, events=EventRecorder(kube), admission_fair_sharing=afs)
    snapshot, result = await admitter.run_pass(NOW)
    await writer.write(snapshot, NOW, result)
    (lq,) = kube.objects(r.LOCAL_QUEUE)
    assert lq["status"]["fairSharing"]["admissionFairSharingStatus"] == {
        "consumedResources": {"cpu": "2"},
        "lastUpdate": "2025-01-01T00:00:00Z",
    }
    # Ten minutes later with nothing held, the usage has halved.
    cache.replace(r.LOCAL_QUEUE, kube.objects(r.LOCAL_QUEUE))
    cache.replace(r.WORKLOAD, [])
    later = NOW + timedelta(minutes=10)
    snapshot, result = await admitter.run_pass(later)
    await writer.write(snapshot, later, result)
    (lq,) = kube.objects(r.LOCAL_QUEUE)
    assert lq["status"]["fairSharing"]["admissionFairSharingStatus"]["consumedResources"] == {"cpu": "1"}
