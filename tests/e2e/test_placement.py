"""Pods that really get scheduled: kube-scheduler places the pods of admitted Jobs on kwok's simulated nodes.

A cluster of its own (module-scoped), started with a node profile, so the shared session cluster stays bare and
the tests that play the kubelet there are untouched. Each test uses its own node group (a label of its own), so
pods a previous test leaves behind while its namespace is deleted never take room from the next one. Turnstile
runs with waitForPodsReady (timeout ``READY_TIMEOUT``); pods on these nodes are Ready within a second or two.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kube import (
    admission_flavors,
    apply,
    cluster_queue,
    condition,
    create,
    eventually,
    flavor,
    get,
    is_true,
    job,
    job_pods,
    local_queue,
    priority_class,
    workload_of,
)
from tests.kubeapi import api
from tests.sessioncluster import fresh_namespace
from webhook.local.cluster import LocalCluster
from webhook.local.nodes import RUN_TIME_ANNOTATION
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

JSON = dict[str, Any]
READY_TIMEOUT = 10
SPOT_TAINT = {"key": "cloud.example.com/spot", "value": "true", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "cloud.example.com/spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}

# Capacities are small on purpose: each test's quota is sized against the nodes its flavor selects.
PROFILE = {
    "nodes": [
        {
            "name": "od",
            "count": 2,
            "labels": {"instance-type": "on-demand"},
            "capacity": {"cpu": "4", "memory": "16Gi"},
        },
        {
            "name": "spot",
            "count": 2,
            "labels": {"instance-type": "spot"},
            "taints": [SPOT_TAINT],
            "capacity": {"cpu": "4", "memory": "16Gi"},
        },
        # Untainted and unlabelled, with the most room: where pods would go if their node selector were lost.
        {"name": "general", "count": 2, "capacity": {"cpu": "16", "memory": "64Gi"}},
        {"name": "pre", "count": 1, "labels": {"pool": "preempt"}, "capacity": {"cpu": "4", "memory": "16Gi"}},
        {"name": "small", "count": 1, "labels": {"pool": "small"}, "capacity": {"cpu": "2", "memory": "8Gi"}},
    ]
}


@pytest.fixture(scope="module")
def nodes_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    work = Path(tmp_path_factory.mktemp("placement"))
    profile = work / "profile.yaml"
    profile.write_text(yaml.safe_dump(PROFILE))
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else work
    local = LocalCluster(base / f"turnstile-nodes-{os.getpid()}", nodes=profile)
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def placing_turnstile(nodes_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    local = LocalTurnstile(
        nodes_cluster,
        Path(tmp_path_factory.mktemp("turnstile-placement")),
        config={
            "waitForPodsReady": {
                "enable": True,
                "timeout": f"{READY_TIMEOUT}s",
                "requeuingStrategy": {"backoffBaseSeconds": 1, "backoffMaxSeconds": 10},
            }
        },
    )
    local.start()
    try:
        yield
    finally:
        local.stop()
        if local.process is not None and local.process.returncode not in (0, None):
            print(local.log_file.read_text()[-5000:])


@pytest.fixture
def ns(nodes_cluster: LocalCluster, placing_turnstile: None, request: pytest.FixtureRequest) -> Iterator[str]:
    yield from fresh_namespace(nodes_cluster, request, "p-")


def running_job(namespace: str, name: str, *, queue: str, pods: int, run_time: str | None = None, **kw: Any) -> JSON:
    """A Job of ``pods`` pods of 1 CPU; with ``run_time`` its pods succeed that long after they start."""
    body = job(namespace, name, queue=queue, parallelism=pods, requests={"cpu": "1"}, **kw)
    if run_time is not None:
        body["spec"]["template"]["metadata"] = {"annotations": {RUN_TIME_ANNOTATION: run_time}}
    return body


def nodes_labelled(cluster: LocalCluster, selector: str) -> set[str]:
    return {node["metadata"]["name"] for node in api(cluster).list("nodes", selector=selector)}


def all_running(cluster: LocalCluster, namespace: str, job_name: str, count: int) -> list[JSON] | None:
    pods = job_pods(cluster, namespace, job_name)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    if len(live) == count and all(p["status"].get("phase") == "Running" and is_true(p, "Ready") for p in live):
        return live
    return None


def test_pods_run_on_the_nodes_of_their_flavor_only_and_succeed_after_their_run_time(
    nodes_cluster: LocalCluster, ns: str
) -> None:
    od, spot, cq = f"od-{ns}", f"spot-{ns}", f"cq-{ns}"
    apply(
        nodes_cluster,
        flavor(od, node_labels={"instance-type": "on-demand"}),
        flavor(spot, node_labels={"instance-type": "spot"}, tolerations=[SPOT_TOLERATION]),
        cluster_queue(cq, flavors={od: {"cpu": "4"}, spot: {"cpu": "8"}}),
        local_queue(ns, "lq", cq),
    )
    # 1. "first" takes all of the on-demand quota; "second" no longer fits there and is admitted on spot.
    create(nodes_cluster, running_job(ns, "first", queue="lq", pods=4, run_time="8"))
    first = eventually(lambda: all_running(nodes_cluster, ns, "first", 4), timeout=45, what="first's pods to run")
    create(nodes_cluster, running_job(ns, "second", queue="lq", pods=4, run_time="3s"))
    second = eventually(lambda: all_running(nodes_cluster, ns, "second", 4), timeout=45, what="second's pods to run")
    assert admission_flavors(workload_of(nodes_cluster, ns, "first") or {}) == {"cpu": od}
    assert admission_flavors(workload_of(nodes_cluster, ns, "second") or {}) == {"cpu": spot}

    # 2. Each job's pods are on nodes of its flavor, and only there; spot nodes are tainted, so the flavor's
    # toleration is what let "second" in.
    on_demand_nodes = nodes_labelled(nodes_cluster, "instance-type=on-demand")
    spot_nodes = nodes_labelled(nodes_cluster, "instance-type=spot")
    assert {p["spec"]["nodeName"] for p in first} <= on_demand_nodes
    assert {p["spec"]["nodeName"] for p in second} <= spot_nodes
    for name in spot_nodes:
        assert get(nodes_cluster, "node", name)["spec"]["taints"] == [SPOT_TAINT]
    assert all(SPOT_TOLERATION in p["spec"]["tolerations"] for p in second)

    # 3. After their run time the pods succeed, the Jobs complete and their Workloads finish.
    for name in ("second", "first"):
        eventually(lambda n=name: is_true(get(nodes_cluster, "job", n, ns), "Complete"), timeout=60, what=f"{name}")
        pods = job_pods(nodes_cluster, ns, name)
        assert [p["status"]["phase"] for p in pods] == ["Succeeded"] * 4
        wl = eventually(lambda n=name: (w := workload_of(nodes_cluster, ns, n)) and is_true(w, "Finished") and w)
        assert is_true(wl, "PodsReady"), wl["status"]["conditions"]


def test_a_pod_that_fits_no_node_stays_pending_and_unschedulable(nodes_cluster: LocalCluster, ns: str) -> None:
    # Not queued (no queue label): what the scheduler and the nodes do on their own.
    def pod(name: str, spec: JSON) -> JSON:
        container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"restartPolicy": "Never", "containers": [container]} | spec,
        }

    create(nodes_cluster, pod("untolerated", {"nodeSelector": {"instance-type": "spot"}}))
    create(nodes_cluster, pod("placed", {"nodeSelector": {"instance-type": "spot"}, "tolerations": [SPOT_TOLERATION]}))
    huge = pod("huge", {})
    huge["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100"
    create(nodes_cluster, huge)

    def unschedulable(name: str) -> JSON | None:
        found = get(nodes_cluster, "pod", name, ns)
        c = condition(found, "PodScheduled")
        return found if c and c.get("status") == "False" and c.get("reason") == "Unschedulable" else None

    untolerated = eventually(lambda: unschedulable("untolerated"), what="the untolerated pod to be unschedulable")
    assert "untolerated taint" in str(condition(untolerated, "PodScheduled"))
    assert "Insufficient cpu" in str(condition(eventually(lambda: unschedulable("huge")), "PodScheduled"))
    placed = eventually(
        lambda: (p := get(nodes_cluster, "pod", "placed", ns))["status"].get("phase") == "Running" and p,
        what="the tolerating pod to run",
    )
    assert placed["spec"]["nodeName"] in nodes_labelled(nodes_cluster, "instance-type=spot")
    for name in ("untolerated", "huge"):
        still = get(nodes_cluster, "pod", name, ns)
        assert still["status"]["phase"] == "Pending"
        assert not still["spec"].get("nodeName")


def test_a_preempted_jobs_pods_are_removed_and_the_preemptor_runs_in_their_place(
    nodes_cluster: LocalCluster, ns: str
) -> None:
    fl, cq = f"pre-{ns}", f"cq-{ns}"
    apply(
        nodes_cluster,
        flavor(fl, node_labels={"pool": "preempt"}),
        priority_class(f"low-{ns}", 10),
        priority_class(f"high-{ns}", 1000),
        cluster_queue(cq, flavors={fl: {"cpu": "4"}}, preemption={"withinClusterQueue": "LowerPriority"}),
        local_queue(ns, "lq", cq),
    )
    create(nodes_cluster, running_job(ns, "low", queue="lq", pods=4, priority_class=f"low-{ns}"))
    low = eventually(lambda: all_running(nodes_cluster, ns, "low", 4), timeout=45, what="low's pods to run")
    (node,) = nodes_labelled(nodes_cluster, "pool=preempt")
    assert {p["spec"]["nodeName"] for p in low} == {node}  # the one node of 4 CPU is full

    create(nodes_cluster, running_job(ns, "high", queue="lq", pods=2, priority_class=f"high-{ns}"))
    eventually(lambda: job_pods(nodes_cluster, ns, "low") == [], timeout=45, what="low's pods to be removed")
    high = eventually(lambda: all_running(nodes_cluster, ns, "high", 2), timeout=45, what="high's pods to run")
    assert {p["spec"]["nodeName"] for p in high} == {node}
    low_wl = workload_of(nodes_cluster, ns, "low")
    assert low_wl is not None
    assert is_true(low_wl, "Preempted")
    assert get(nodes_cluster, "job", "low", ns)["spec"]["suspend"] is True


def test_pods_that_cannot_all_be_scheduled_are_evicted_on_timeout_and_requeued(
    nodes_cluster: LocalCluster, ns: str
) -> None:
    # The quota (4 CPU) is larger than the flavor's only node (2 CPU): admitted, but only 2 of 4 pods can run.
    fl, cq = f"small-{ns}", f"cq-{ns}"
    apply(
        nodes_cluster,
        flavor(fl, node_labels={"pool": "small"}),
        cluster_queue(cq, flavors={fl: {"cpu": "4"}}),
        local_queue(ns, "lq", cq),
    )
    create(nodes_cluster, running_job(ns, "big", queue="lq", pods=4))

    def split() -> list[JSON] | None:
        pods = [p for p in job_pods(nodes_cluster, ns, "big") if not p["metadata"].get("deletionTimestamp")]
        phases = sorted(p["status"].get("phase", "") for p in pods)
        return pods if phases == ["Pending", "Pending", "Running", "Running"] else None

    pods = eventually(split, timeout=45, what="2 pods running and 2 pending")
    assert {p["spec"]["nodeName"] for p in pods if p["status"]["phase"] == "Running"} == {"small-0"}
    wl = workload_of(nodes_cluster, ns, "big")
    assert wl is not None
    assert is_true(wl, "Admitted")
    assert not is_true(wl, "PodsReady")

    # 1. Past the timeout the Workload is evicted (PodsReadyTimeout), the Job suspended and its pods removed.
    evicted = eventually(
        lambda: (w := workload_of(nodes_cluster, ns, "big")) and is_true(w, "Evicted") and w,
        timeout=READY_TIMEOUT + 30,
        what="the eviction for PodsReadyTimeout",
    )
    assert (condition(evicted, "Evicted") or {}).get("reason") == "PodsReadyTimeout"
    eventually(lambda: job_pods(nodes_cluster, ns, "big") == [], timeout=30, what="the pods to be removed")

    # 2. After the backoff (1 s) it is requeued and admitted again, with the requeue counted.
    again = eventually(
        lambda: (
            (w := workload_of(nodes_cluster, ns, "big"))
            and is_true(w, "Admitted")
            and ((w.get("status") or {}).get("requeueState") or {}).get("count") == 1
            and w
        ),
        timeout=30,
        what="the Workload to be admitted again",
    )
    assert again["metadata"]["name"] == evicted["metadata"]["name"]
    eventually(split, timeout=45, what="the Job's pods to come back")
