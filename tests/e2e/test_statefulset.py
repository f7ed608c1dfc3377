"""A StatefulSet through Turnstile, as Kueue manages one: its pods form one pod group (fast admission, sized by
``replicas``), admitted whole; with the default ``OrderedReady`` policy pod-1 comes only once pod-0 runs, and is
released at once because the group's Workload already holds its quota. Scaling to zero frees the quota; other
resizes of a queued StatefulSet through the object are refused, and so is a queue change once admitted; ``kubectl
scale`` (the /scale subresource, which no webhook sees) to any size is followed from the live StatefulSet.
Preempted, its running pods are deleted (pods cannot be suspended); the StatefulSet controller makes them again,
gated and without the flavor, its Workload waits without quota, and runs them again once admitted.

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
    condition,
    create,
    eventually,
    flavor,
    get,
    is_true,
    items,
    job,
    local_queue,
    maybe_get,
    patch,
    priority_class,
    started,
    workload_of,
)
from webhook.jobs.statefulset import group_name
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration
GATE = {"name": "kueue.x-k8s.io/admission"}
SELECTOR = {"pool": "stateful"}


def _statefulset(namespace: str, name: str, replicas: int, *, priority: str = "") -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "q"} | ({"kueue.x-k8s.io/priority-class": priority} if priority else {})
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
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


TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "stateful", "effect": "NoSchedule"}


def _placed(pod: dict[str, Any]) -> bool:
    """Released onto the flavor: its node selector and its toleration."""
    return _released(pod) and TOLERATION in (pod["spec"].get("tolerations") or [])


def _regated(pod: dict[str, Any]) -> bool:
    """Waiting for admission again, with nothing of the flavor left on it."""
    spec = pod["spec"]
    return (
        GATE in (spec.get("schedulingGates") or [])
        and not spec.get("nodeSelector")
        and TOLERATION not in (spec.get("tolerations") or [])
    )


def test_a_preempted_statefulset_has_its_pods_gated_again_and_runs_again_once_readmitted(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    cq, fl = f"cq-{namespace}", f"fl-{namespace}"
    low, high = f"low-{namespace}", f"high-{namespace}"
    apply(
        cluster,
        flavor(fl, node_labels=SELECTOR, tolerations=[TOLERATION]),
        cluster_queue(cq, flavors={fl: {"cpu": "2"}}, preemption={"withinClusterQueue": "LowerPriority"}),
        priority_class(low, 10),
        priority_class(high, 1000),
    )
    apply(cluster, local_queue(namespace, "q", cq))
    group = group_name(namespace, "web")

    # 1. A low-priority StatefulSet of two, admitted and running on the flavor.
    create(cluster, _statefulset(namespace, "web", 2, priority=low))
    eventually(lambda: _placed(_pods(cluster, namespace, "web").get("web-0") or {"spec": {}}), what="web-0 placed")
    _run(cluster, namespace, "web-0")
    eventually(lambda: _placed(_pods(cluster, namespace, "web").get("web-1") or {"spec": {}}), what="web-1 placed")
    _run(cluster, namespace, "web-1")
    before = {name: pod["metadata"]["uid"] for name, pod in _pods(cluster, namespace, "web").items()}
    assert get(cluster, WORKLOAD, group, namespace)["spec"]["priority"] == 10

    # 2. A high-priority Job needs the whole quota: the StatefulSet's Workload is preempted.
    create(cluster, job(namespace, "urgent", queue="q", requests={"cpu": "2"}, priority_class=high))
    evicted = eventually(
        lambda: (w := maybe_get(cluster, WORKLOAD, group, namespace)) and is_true(w, "Preempted") and w,
        what="web's Workload to be preempted",
    )
    assert is_true(evicted, "Evicted"), condition(evicted, "Evicted")

    # 3. Its running pods are removed (pods cannot be suspended); the StatefulSet controller makes web-0 again, and
    #    it waits at the gate with none of the flavor's node selector or tolerations; web-1 waits for web-0
    #    (OrderedReady). The quota is back: the Job runs.
    def regated() -> dict[str, dict[str, Any]] | None:
        pods = _pods(cluster, namespace, "web")
        fresh = list(pods) == ["web-0"] and pods["web-0"]["metadata"]["uid"] != before["web-0"]
        return pods if fresh and _regated(pods["web-0"]) else None

    eventually(regated, what="web-0 made again, gated, without the flavor")
    started(cluster, namespace, "urgent")
    urgent = workload_of(cluster, namespace, "urgent")
    assert urgent is not None
    assert is_true(urgent, "Admitted")
    pending = eventually(
        lambda: (
            (w := maybe_get(cluster, WORKLOAD, group, namespace))
            and (qr := condition(w, "QuotaReserved"))
            and qr["status"] == "False"
            and not (w.get("status") or {}).get("admission")
            and w
        ),
        what="web's Workload to give its quota back and wait",
    )
    assert [ps["count"] for ps in pending["spec"]["podSets"]] == [2]
    template = get(cluster, "statefulset", "web", namespace)["spec"]["template"]["spec"]
    assert "nodeSelector" not in template  # the template never carried the flavor: the pods did
    assert "tolerations" not in template
    assert _regated(_pods(cluster, namespace, "web")["web-0"])  # still waiting: its quota is the Job's

    # 4. The Job goes: the StatefulSet is admitted again and runs again, both pods on the flavor.
    cluster.kubectl("delete", "job", "urgent", "-n", namespace, "--wait=false")
    # (it took over 30 s once, in a run at load ~10)
    eventually(lambda: _placed(_pods(cluster, namespace, "web")["web-0"]), timeout=60, what="web-0 placed again")
    assert is_true(get(cluster, WORKLOAD, group, namespace), "Admitted")
    _run(cluster, namespace, "web-0")
    eventually(
        lambda: (
            (p := _pods(cluster, namespace, "web").get("web-1"))
            and _placed(p)
            and p["metadata"]["uid"] != before["web-1"]
        ),
        what="web-1 made again and placed",
    )


def _cpu_in_use(cluster: LocalCluster, cq: str) -> str:
    """The ClusterQueue's cpu usage as its status reports it."""
    usage = (get(cluster, "clusterqueue", cq).get("status") or {}).get("flavorsUsage") or []
    totals = [r["total"] for f in usage for r in f.get("resources") or [] if r["name"] == "cpu"]
    return totals[0] if totals else "0"


def _admitted_for(cluster: LocalCluster, namespace: str, group: str, count: int) -> bool:
    wl = maybe_get(cluster, WORKLOAD, group, namespace)
    return wl is not None and [ps["count"] for ps in wl["spec"]["podSets"]] == [count] and is_true(wl, "Admitted")


def _run_in_order(cluster: LocalCluster, namespace: str, count: int) -> None:
    """Each pod released onto the flavor, then run, in order (OrderedReady makes web-i once web-(i-1) runs)."""
    for i in range(count):
        name = f"web-{i}"
        eventually(lambda n=name: _released(_pods(cluster, namespace, "web").get(n) or {"spec": {}}), what=name)
        _run(cluster, namespace, name)


def test_kubectl_scale_of_an_admitted_statefulset_queues_its_group_again_at_the_new_size(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    """``kubectl scale`` goes through /scale, which no webhook sees: the group's size is the live StatefulSet's. An
    admitted Workload's pod sets are fixed, so a resized group is stopped (its pods deleted, made again gated by
    the StatefulSet) and queued again at the new size; scaled down, the quota it no longer needs goes back."""
    cq, fl = f"cq-{namespace}", f"fl-{namespace}"
    apply(cluster, flavor(fl, node_labels=SELECTOR), cluster_queue(cq, flavors={fl: {"cpu": "3"}}))
    apply(cluster, local_queue(namespace, "q", cq))
    group = group_name(namespace, "web")
    create(cluster, _statefulset(namespace, "web", 2))
    _run_in_order(cluster, namespace, 2)
    assert _admitted_for(cluster, namespace, group, 2)
    eventually(lambda: _cpu_in_use(cluster, cq) == "2", what="2 cpu in use")
    first = _pods(cluster, namespace, "web")["web-0"]["metadata"]["uid"]

    # Up to three: queued again for three, admitted, each pod released in turn (web-0 made again).
    cluster.kubectl("scale", "statefulset", "web", "-n", namespace, "--replicas=3")
    eventually(lambda: _admitted_for(cluster, namespace, group, 3), what="the Workload admitted for 3")
    _run_in_order(cluster, namespace, 3)
    assert _pods(cluster, namespace, "web")["web-0"]["metadata"]["uid"] != first
    eventually(lambda: _cpu_in_use(cluster, cq) == "3", what="3 cpu in use")

    # Down to one: queued again for one; the quota for the other two goes back.
    cluster.kubectl("scale", "statefulset", "web", "-n", namespace, "--replicas=1")
    eventually(lambda: _admitted_for(cluster, namespace, group, 1), what="the Workload admitted for 1")
    eventually(lambda: list(_pods(cluster, namespace, "web")) == ["web-0"], what="web-1 and web-2 to go")
    eventually(lambda: _released(_pods(cluster, namespace, "web")["web-0"]), what="web-0 released")
    eventually(lambda: _cpu_in_use(cluster, cq) == "1", what="1 cpu in use")


def test_created_with_zero_replicas_then_kubectl_scaled_up_requeued_and_down_its_group_follows(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    """Created with 0 replicas, its pods still form a group the pod webhook accepts; ``kubectl scale`` to 2 queues
    a Workload for 2; moved to another queue while it waits, its gated pod and its Workload follow (Kueue's
    syncQueueLabel); back to 0, the Workload and its quota go."""
    cq, fl, empty = f"cq-{namespace}", f"fl-{namespace}", f"empty-{namespace}"
    apply(
        cluster,
        flavor(fl, node_labels=SELECTOR),
        cluster_queue(cq, flavors={fl: {"cpu": "2"}}),
        cluster_queue(empty, flavors={fl: {"cpu": "0"}}),
    )
    apply(cluster, local_queue(namespace, "q", empty), local_queue(namespace, "q2", cq))
    group = group_name(namespace, "web")
    create(cluster, _statefulset(namespace, "web", 0))
    assert maybe_get(cluster, WORKLOAD, group, namespace) is None

    cluster.kubectl("scale", "statefulset", "web", "-n", namespace, "--replicas=2")
    waiting = eventually(lambda: maybe_get(cluster, WORKLOAD, group, namespace), what="the Workload")
    assert [ps["count"] for ps in waiting["spec"]["podSets"]] == [2]
    assert not is_true(waiting, "Admitted")  # its queue has no quota

    patch(cluster, "statefulset", "web", {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q2"}}}, namespace)
    eventually(lambda: _admitted_for(cluster, namespace, group, 2), what="the Workload admitted for 2 in q2")
    assert get(cluster, WORKLOAD, group, namespace)["spec"]["queueName"] == "q2"
    assert _pods(cluster, namespace, "web")["web-0"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q2"
    _run_in_order(cluster, namespace, 2)
    eventually(lambda: _cpu_in_use(cluster, cq) == "2", what="2 cpu in use")

    cluster.kubectl("scale", "statefulset", "web", "-n", namespace, "--replicas=0")
    eventually(lambda: not _pods(cluster, namespace, "web"), what="web's pods to go")
    eventually(lambda: maybe_get(cluster, WORKLOAD, group, namespace) is None, what="web's Workload to go")
    eventually(lambda: _cpu_in_use(cluster, cq) == "0", what="no cpu in use")
