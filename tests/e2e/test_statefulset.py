"""A StatefulSet through Turnstile, as Kueue manages one: its pods form one pod group (fast admission, sized by
``replicas``), admitted whole; with the default ``OrderedReady`` policy pod-1 comes only once pod-0 runs, and is
released at once because the group's Workload already holds its quota. Scaling to zero frees the quota; other
resizes of a queued StatefulSet are refused, and so is a queue change once admitted.

The local cluster runs the statefulset controller (it creates and deletes the pods); no scheduler, nodes or
kubelet: the test marks pods Running and Ready as a kubelet would, and an admitted pod is one whose admission gate
is gone and whose nodeSelector names the flavor.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.kube import (
    WORKLOAD,
    apply,
    cluster_queue,
    create,
    eventually,
    flavor,
    get,
    is_true,
    items,
    local_queue,
    maybe_get,
    patch,
)
from webhook.jobs.statefulset import group_name
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration
GATE = {"name": "kueue.x-k8s.io/admission"}
SELECTOR = {"pool": "stateful"}


def _statefulset(namespace: str, name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
            },
        },
    }


def _pods(cluster: LocalCluster, namespace: str, app: str) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in items(cluster, "pods", namespace)
        if p["metadata"].get("labels", {}).get("app") == app and not p["metadata"].get("deletionTimestamp")
    }


def _released(pod: dict[str, Any]) -> bool:
    return GATE not in (pod["spec"].get("schedulingGates") or []) and pod["spec"].get("nodeSelector") == SELECTOR


def _run(cluster: LocalCluster, namespace: str, name: str) -> None:
    """What the kubelet would report once the pod started."""
    status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    cluster.kubectl(
        "patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )


def _refused(cluster: LocalCluster, namespace: str, name: str, change: dict[str, Any]) -> str:
    done = cluster.kubectl(
        "patch", "statefulset", name, "-n", namespace, "--type=merge", "-p", json.dumps(change), check=False
    )
    assert done.returncode != 0, f"{change} was accepted"
    return done.stderr


def test_a_statefulset_is_one_pod_group_admitted_whole_and_scaling_to_zero_frees_it(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    cq, fl = f"cq-{namespace}", f"fl-{namespace}"
    apply(cluster, flavor(fl, node_labels=SELECTOR), cluster_queue(cq, flavors={fl: {"cpu": "0"}}))
    apply(cluster, local_queue(namespace, "q", cq))
    group = group_name(namespace, "web")

    # 1. The webhook stamps the pod template as one fast-admission group of `replicas` pods.
    created = create(cluster, _statefulset(namespace, "web", 2))
    template = created["spec"]["template"]["metadata"]
    assert template["labels"]["kueue.x-k8s.io/pod-group-name"] == group
    assert template["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "2"
    assert template["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] == "true"

    # 2. pod-0 is gated, and its group's Workload exists already, for both pods, pending (no quota yet).
    eventually(
        lambda: (
            GATE in (_pods(cluster, namespace, "web").get("web-0") or {"spec": {}})["spec"].get("schedulingGates", [])
        ),
        what="web-0 to be created gated",
    )
    wl = eventually(lambda: maybe_get(cluster, WORKLOAD, group, namespace), what="the group's Workload")
    assert [ps["count"] for ps in wl["spec"]["podSets"]] == [2]
    assert wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert not is_true(wl, "Admitted")
    assert list(_pods(cluster, namespace, "web")) == ["web-0"]  # OrderedReady: pod-1 waits for pod-0

    # 3. Quota for two: admitted whole; pod-0 released onto the flavor. Once it runs, pod-1 comes and is released
    #    at once (its quota is the group's).
    apply(cluster, cluster_queue(cq, flavors={fl: {"cpu": "2"}}))
    eventually(lambda: _released(_pods(cluster, namespace, "web")["web-0"]), what="web-0 released")
    assert is_true(get(cluster, WORKLOAD, group, namespace), "Admitted")
    _run(cluster, namespace, "web-0")
    eventually(
        lambda: "web-1" in (pods := _pods(cluster, namespace, "web")) and _released(pods["web-1"]),
        what="web-1 created and released",
    )
    _run(cluster, namespace, "web-1")
    owners = {o["name"] for o in get(cluster, WORKLOAD, group, namespace)["metadata"]["ownerReferences"]}
    assert owners == {"web-0", "web-1"}  # it goes when the last pod goes

    # 4. While admitted: no resize but to zero, no queue change.
    assert "spec.replicas" in _refused(cluster, namespace, "web", {"spec": {"replicas": 3}})
    assert "queue-name" in _refused(
        cluster, namespace, "web", {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "x"}}}
    )

    # 5. Another StatefulSet queues behind it: no quota left.
    create(cluster, _statefulset(namespace, "next", 1))
    waiting = eventually(
        lambda: maybe_get(cluster, WORKLOAD, group_name(namespace, "next"), namespace), what="next's Workload"
    )
    assert not is_true(waiting, "Admitted")

    # 6. Scaled to zero: the pods go, the Workload with them, and the quota goes to the waiting one.
    patch(cluster, "statefulset", "web", {"spec": {"replicas": 0}}, namespace)
    eventually(lambda: not _pods(cluster, namespace, "web"), what="web's pods to go")
    eventually(lambda: maybe_get(cluster, WORKLOAD, group, namespace) is None, what="web's Workload to go")
    eventually(lambda: _released(_pods(cluster, namespace, "next")["next-0"]), what="next-0 admitted")

    # 7. Deleted: its pods and Workload go too, freeing the quota.
    cluster.kubectl("delete", "statefulset", "next", "-n", namespace, "--wait=false")
    eventually(
        lambda: maybe_get(cluster, WORKLOAD, group_name(namespace, "next"), namespace) is None,
        what="next's Workload to go",
    )
