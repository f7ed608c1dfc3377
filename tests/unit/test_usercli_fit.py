"""``turnstile fit -f`` and the scheduler's answer in ``turnstile why``: one engine (``core.fit``) for both."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.doubles.fakekube import FakeKube
from tests.unit.test_usercli import NOW, cluster_with_a_queue, put
from tests.unit.test_usercli import kube as kube  # the fixture
from webhook.api import constants
from webhook.kube import resources as r
from webhook.kube.errors import Forbidden
from webhook.usercli import commands


def job_manifest(name: str, *, cpu: str = "1", parallelism: int = 1, queue: str | None = "user-queue") -> str:
    labels = {constants.QUEUE_NAME_LABEL: queue} if queue else {}
    return yaml.safe_dump(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "parallelism": parallelism,
                "completions": parallelism,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                    }
                },
            },
        }
    )


async def with_flavor(kube: FakeKube) -> None:
    await cluster_with_a_queue(kube)
    await put(
        kube,
        r.RESOURCE_FLAVOR,
        {"apiVersion": constants.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "on-demand"}, "spec": {}},
    )
    # The running workload holds the queue's 4 CPUs in on-demand (the shared fixture records no assignment).
    assignment = {"name": "main", "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "4"}, "count": 1}
    running = await kube.get(r.WORKLOAD, "running", namespace="a")
    admission = running["status"]["admission"] | {"podSetAssignments": [assignment]}
    await kube.patch_status(r.WORKLOAD, "running", {"status": {"admission": admission}}, namespace="a")


async def test_fit_of_a_job_that_waits(kube: FakeKube) -> None:
    await with_flavor(kube)
    text = await commands.fit(kube, job_manifest("next", cpu="2"), namespace="a", now=NOW)
    assert text.startswith("Job a/next would wait in ClusterQueue cq")
    assert "Position:  3 of 3" in text  # behind "first" and job-train, created earlier
    assert "Missing:   cpu in flavor on-demand: needs 2, 0 free, 2 short" in text
    data = json.loads(await commands.fit(kube, job_manifest("next", cpu="2"), namespace="a", now=NOW, fmt="json"))
    assert data["fit"]["verdict"] == "Pending"
    assert data["fit"]["reason"] == "WaitingForQuota"


async def test_why_carries_the_same_answer(kube: FakeKube) -> None:
    await with_flavor(kube)
    data = yaml.safe_load(await commands.why(kube, "train", namespace="a", now=NOW, fmt="yaml"))
    assert data["fit"]["verdict"] == "Pending"
    assert data["fit"]["position"] == 2
    text = await commands.why(kube, "train", namespace="a", now=NOW)
    assert "The scheduler, asked now (as `turnstile fit` asks it):" in text
    assert "Job a/train waits in ClusterQueue cq" in text


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        pytest.param(job_manifest("x", queue=None), "has no kueue.x-k8s.io/queue-name label", id="no-queue"),
        pytest.param("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "not a v1 Pod", id="not-a-job"),
        pytest.param("a: [", "not YAML", id="not-yaml"),
        pytest.param(job_manifest("x") + "---\n" + job_manifest("y"), "exactly one", id="two-objects"),
    ],
)
async def test_bad_input_is_a_clear_error(kube: FakeKube, manifest: str, message: str) -> None:
    await with_flavor(kube)
    with pytest.raises(commands.CommandError, match=message):
        await commands.fit(kube, manifest, namespace="a", now=NOW)


async def test_fit_of_a_job_that_fits(kube: FakeKube) -> None:
    await with_flavor(kube)
    big: dict[str, Any] = {
        "metadata": {"name": "cq"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "100"}]}],
                }
            ]
        },
    }
    await kube.patch(r.CLUSTER_QUEUE, "cq", big)
    text = await commands.fit(kube, job_manifest("small"), namespace="a", now=NOW)
    assert text.splitlines() == [
        "Job a/small would be admitted now to ClusterQueue cq",
        "  Flavors:   main: cpu=on-demand",
    ]


async def test_why_without_permission_to_list_cluster_queues_still_explains(kube: FakeKube) -> None:
    await with_flavor(kube)
    kube.faults.fail_next("list", resource=r.CLUSTER_QUEUE, error=Forbidden("403 Forbidden", status=403))
    data = yaml.safe_load(await commands.why(kube, "train", namespace="a", now=NOW, fmt="yaml"))
    assert data["fit"] is None
    assert data["workload"]["position"] == 2


async def test_fit_places_a_jobset_as_its_workload_would_be(kube: FakeKube) -> None:
    await with_flavor(kube)
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "labels": {constants.QUEUE_NAME_LABEL: "user-queue"}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "template": {
                                "spec": {
                                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
                                }
                            },
                        }
                    },
                }
            ]
        },
    }
    data = json.loads(await commands.fit(kube, yaml.safe_dump(jobset), namespace="a", now=NOW, fmt="json"))
    assert data["fit"]["verdict"] == "Pending"
    text = await commands.fit(kube, yaml.safe_dump(jobset), namespace="a", now=NOW)
    assert text.startswith("JobSet a/js would wait in ClusterQueue cq")
    assert "needs 4" in text  # 2 replicas x 2 pods x 1 CPU


async def test_fit_refuses_a_kind_managed_through_its_pods(kube: FakeKube) -> None:
    await with_flavor(kube)
    sts = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s, labels: {kueue.x-k8s.io/queue-name: q}}\n"
    with pytest.raises(commands.CommandError, match="not a apps/v1 StatefulSet"):
        await commands.fit(kube, sts, namespace="a", now=NOW)
