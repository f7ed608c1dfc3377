"""A Deployment through Turnstile, managed through its pods as Kueue does: the queue label goes into the pod
template, every pod is gated and admitted on its own, scaling up queues the new pods, scaling down frees quota.

The local cluster runs the deployment and replicaset controllers (they create and delete the pods); no scheduler
or nodes: an admitted pod is one whose admission gate is gone and whose nodeSelector names the flavor.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.kube import WORKLOAD, apply, cluster_queue, create, eventually, flavor, get, is_true, items, local_queue
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration
GATE = {"name": "kueue.x-k8s.io/admission"}


def _deployment(namespace: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "serve"}},
            "template": {
                "metadata": {"labels": {"app": "serve"}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
            },
        },
    }


def _pods(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    return [p for p in items(cluster, "pods", namespace) if not p["metadata"].get("deletionTimestamp")]


def _state(cluster: LocalCluster, namespace: str) -> tuple[int, int]:
    """(admitted, gated) pods of the Deployment."""
    pods = _pods(cluster, namespace)
    gated = [p for p in pods if GATE in (p["spec"].get("schedulingGates") or [])]
    admitted = [p for p in pods if p not in gated and p["spec"].get("nodeSelector") == {"pool": "serving"}]
    return len(admitted), len(gated)


def test_a_deployments_pods_are_admitted_one_by_one_and_follow_its_scale(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    cq = f"cq-{namespace}"
    apply(
        cluster,
        flavor(f"fl-{namespace}", node_labels={"pool": "serving"}),
        cluster_queue(cq, flavors={f"fl-{namespace}": {"cpu": "2"}}),
        local_queue(namespace, "q", cq),
    )
    # 1. The webhook puts the queue label into the pod template; the Deployment itself is not suspended.
    created = create(cluster, _deployment(namespace, 3))
    assert created["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q"
    # 2. Three pods, one Workload each: two fit the 2 CPU, the third stays gated.
    eventually(lambda: _state(cluster, namespace) == (2, 1), what="two pods admitted and one gated")
    workloads = items(cluster, WORKLOAD, namespace)
    assert len(workloads) == 3
    assert sum(is_true(w, "Admitted") for w in workloads) == 2
    assert all(w["spec"]["podSets"][0]["count"] == 1 for w in workloads)
    # 3. Scaled down to one: the deleted pods' Workloads go with them and the one left runs.
    cluster.kubectl("scale", "deployment", "serve", "-n", namespace, "--replicas=1")
    eventually(lambda: _state(cluster, namespace) == (1, 0), what="one pod left, admitted")
    eventually(lambda: len(items(cluster, WORKLOAD, namespace)) == 1, what="the deleted pods' Workloads to go")
    # 4. Scaled up to three: one new pod fits beside it, the other queues.
    patch = {"spec": {"replicas": 3}}
    cluster.kubectl("patch", "deployment", "serve", "-n", namespace, "--type=merge", "-p", json.dumps(patch))
    eventually(lambda: _state(cluster, namespace) == (2, 1), what="one more admitted and one queued after scale-up")
    assert get(cluster, "deployment", "serve", namespace)["spec"]["replicas"] == 3
