"""Plain pods and pod groups through Turnstile: gated on creation, one Workload per complete group, ungated with
the flavor's node selector when the whole group fits, finished when all pods end."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.kube import apply, cluster_queue, create, eventually, flavor, get, is_true, local_queue, maybe_get
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration


def _pod(namespace: str, name: str, *, group: str, total: int, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/pod-group-name": group},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": str(total)},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def _gated(cluster: LocalCluster, namespace: str, name: str) -> bool:
    gates = get(cluster, "pod", name, namespace)["spec"].get("schedulingGates") or []
    return {"name": "kueue.x-k8s.io/admission"} in gates


def test_a_pod_group_is_admitted_whole_and_finishes(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    cq = f"cq-{namespace}"
    apply(
        cluster,
        flavor("pods-flavor", node_labels={"pool": "pods"}),
        cluster_queue(cq, flavors={"pods-flavor": {"cpu": "4"}}),
        local_queue(namespace, "q", cq),
    )
    # 1. Two of three pods: gated, and no Workload yet (the group is incomplete).
    for i in range(2):
        create(cluster, _pod(namespace, f"worker-{i}", group="trio", total=3))
    assert maybe_get(cluster, "workloads.kueue.x-k8s.io", "trio", namespace) is None
    assert _gated(cluster, namespace, "worker-0")

    # 2. The third pod completes the group: one Workload, admitted whole, every pod ungated onto the flavor.
    create(cluster, _pod(namespace, "worker-2", group="trio", total=3))
    wl = eventually(
        lambda: (
            (w := maybe_get(cluster, "workloads.kueue.x-k8s.io", "trio", namespace)) and is_true(w, "Admitted") and w
        ),
        what="the group's Workload to be admitted",
    )
    assert sum(p["count"] for p in wl["spec"]["podSets"]) == 3
    for i in range(3):
        eventually(lambda i=i: not _gated(cluster, namespace, f"worker-{i}"), what=f"worker-{i} to be ungated")
        assert get(cluster, "pod", f"worker-{i}", namespace)["spec"]["nodeSelector"] == {"pool": "pods"}

    # 3. A second group of 2 x 1 CPU does not fit beside 3 CPU: both its pods stay gated.
    for i in range(2):
        create(cluster, _pod(namespace, f"late-{i}", group="duo", total=2))
    waiting = eventually(
        lambda: (
            (w := maybe_get(cluster, "workloads.kueue.x-k8s.io", "duo", namespace))
            and (w.get("status") or {}).get("conditions")
            and w
        ),
        what="the second group's Workload with a pending reason",
    )
    assert not is_true(waiting, "QuotaReserved")
    assert _gated(cluster, namespace, "late-0")
    assert _gated(cluster, namespace, "late-1")

    # 4. The first group's pods succeed: its Workload finishes and the second group starts.
    for i in range(3):
        cluster.kubectl(
            "patch",
            "pod",
            f"worker-{i}",
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"phase": "Succeeded"}}),
        )
    eventually(
        lambda: is_true(get(cluster, "workloads.kueue.x-k8s.io", "trio", namespace), "Finished"),
        what="the first group's Workload to finish",
    )
    eventually(lambda: not _gated(cluster, namespace, "late-0") and not _gated(cluster, namespace, "late-1"))
