"""RayJob and RayCluster (ray.io/v1) through Turnstile, on the real API server with KubeRay's own CRDs (from the
github.com/ray-project/kuberay/ray-operator Go module v1.5.0, hack/third-party-crds.sh).

No KubeRay operator runs: nothing creates the Ray pods, and the test writes the RayJob's status as the operator
would (``jobDeploymentStatus: Complete``). A RayCluster never finishes: it gives its quota back when deleted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.kindflow import KindUnderTest, run_lifecycle
from tests.e2e.kube import apply, local_queue
from webhook.jobs.ray import RAYCLUSTER, RAYJOB
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration
JSON = dict[str, Any]


def _pod(name: str) -> JSON:
    container = {"name": name, "image": "rayproject/ray:2.9.0", "resources": {"requests": {"cpu": "1"}}}
    return {"spec": {"containers": [container]}}


def _cluster_spec() -> JSON:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": _pod("ray-head")},
        "workerGroupSpecs": [
            {
                "groupName": "Small",  # pod set "small", as Kueue names it
                "replicas": 2,
                "minReplicas": 0,
                "maxReplicas": 4,
                "rayStartParams": {},
                "template": _pod("ray-worker"),
            }
        ],
    }


def _labels(queue: str, priority: str) -> dict[str, str]:
    return {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": priority}


def rayjob(namespace: str, name: str, queue: str, priority: str) -> JSON:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(queue, priority)},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": _cluster_spec(),
            "submitterPodTemplate": {"spec": {"restartPolicy": "Never"} | _pod("submit")["spec"]},
        },
    }


def raycluster(namespace: str, name: str, queue: str, priority: str) -> JSON:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(queue, priority)},
        "spec": _cluster_spec(),
    }


def _rayjob_templates(obj: JSON) -> dict[str, JSON]:
    spec = obj["spec"]
    return _cluster_templates(spec["rayClusterSpec"]) | {"submitter": spec["submitterPodTemplate"]}


def _cluster_templates(cluster_spec: JSON) -> dict[str, JSON]:
    workers = {g["groupName"].lower(): g["template"] for g in cluster_spec["workerGroupSpecs"]}
    return {"head": cluster_spec["headGroupSpec"]["template"]} | workers


RAY_JOB = KindUnderTest(
    kind=RAYJOB.kind,
    build=rayjob,
    templates=_rayjob_templates,
    pod_sets={"head": 1, "small": 2, "submitter": 1},
    finished_status={"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"},
)
RAY_CLUSTER = KindUnderTest(
    kind=RAYCLUSTER.kind,
    build=raycluster,
    templates=lambda obj: _cluster_templates(obj["spec"]),
    pod_sets={"head": 1, "small": 2},
    finished_status=None,
)


def test_a_rayjob_is_queued_admitted_finished_and_preempted(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    run_lifecycle(cluster, namespace, RAY_JOB)


def test_a_raycluster_is_queued_admitted_deleted_and_preempted(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    run_lifecycle(cluster, namespace, RAY_CLUSTER)


def test_autoscaling_is_refused_with_a_reason(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    apply(cluster, local_queue(namespace, "q", f"cq-{namespace}"))
    body = raycluster(namespace, "scaled", "q", "none")
    body["spec"]["enableInTreeAutoscaling"] = True
    done = cluster.kubectl("create", "-f", "-", input=json.dumps(body), check=False)
    assert done.returncode != 0
    assert "spec.enableInTreeAutoscaling" in done.stderr
    assert "cannot use Ray's autoscaling" in done.stderr
