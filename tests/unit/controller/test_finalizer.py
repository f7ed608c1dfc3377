"""Deleted ClusterQueues and ResourceFlavors go once nothing uses them, and a terminating ClusterQueue is inactive."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.doubles.fakekube import FakeKube
from webhook.api.clusterqueue import parse_cluster_queue
from webhook.controller.finalizer import QueueFinalizers
from webhook.controller.watches import build_cache
from webhook.kube import resources as r

NOW = datetime(2025, 1, 1, tzinfo=UTC)
IN_USE = "kueue.x-k8s.io/resource-in-use"


def cq(name: str, flavor: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "finalizers": [IN_USE]},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
                }
            ],
        },
    }


def holding(cluster_queue: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"podSets": []},
        "status": {"admission": {"clusterQueue": cluster_queue, "podSetAssignments": []}},
    }


async def test_a_deleted_cluster_queue_goes_once_no_quota_is_held_in_it_then_its_flavor() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    finalizers = QueueFinalizers(kube, cache)
    await kube.create(r.RESOURCE_FLAVOR, {"metadata": {"name": "f", "finalizers": [IN_USE]}, "spec": {}})
    await kube.create(r.CLUSTER_QUEUE, cq("cq", "f"))
    workload = await kube.create(r.WORKLOAD, holding("cq"))
    workload = await kube.replace_status(r.WORKLOAD, workload | {"status": holding("cq")["status"]})
    await kube.delete(r.CLUSTER_QUEUE, "cq")
    await kube.delete(r.RESOURCE_FLAVOR, "f")

    def refresh() -> None:
        for res in (r.CLUSTER_QUEUE, r.RESOURCE_FLAVOR, r.WORKLOAD):
            cache.replace(res, kube.objects(res))

    # 1. Quota held in it: both stay (the flavor is listed by the queue).
    refresh()
    await finalizers.sync()
    assert [o["metadata"]["name"] for o in kube.objects(r.CLUSTER_QUEUE)] == ["cq"]
    assert parse_cluster_queue(kube.objects(r.CLUSTER_QUEUE)[0]).active is False
    assert [o["metadata"]["name"] for o in kube.objects(r.RESOURCE_FLAVOR)] == ["f"]

    # 2. The workload finished: the queue goes; the next pass, the flavor no queue lists.
    workload["status"]["conditions"] = [{"type": "Finished", "status": "True", "reason": "Succeeded", "message": ""}]
    await kube.replace_status(r.WORKLOAD, workload)
    refresh()
    await finalizers.sync()
    assert kube.objects(r.CLUSTER_QUEUE) == []
    refresh()
    await finalizers.sync()
    assert kube.objects(r.RESOURCE_FLAVOR) == []


async def test_a_flavor_a_live_queue_lists_stays() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = build_cache()
    await kube.create(r.RESOURCE_FLAVOR, {"metadata": {"name": "f", "finalizers": [IN_USE]}, "spec": {}})
    await kube.create(r.CLUSTER_QUEUE, cq("cq", "f"))
    await kube.delete(r.RESOURCE_FLAVOR, "f")
    for res in (r.CLUSTER_QUEUE, r.RESOURCE_FLAVOR):
        cache.replace(res, kube.objects(res))
    await QueueFinalizers(kube, cache).sync()
    assert [o["metadata"]["name"] for o in kube.objects(r.RESOURCE_FLAVOR)] == ["f"]
