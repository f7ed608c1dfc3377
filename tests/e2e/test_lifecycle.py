"""What happens to admitted work afterwards: deactivation, maximum execution time, deletion, stopped queues, and a
job that got past while the webhook was down. Each test owns its namespace and its cluster-scoped objects."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.kube import (
    JSON,
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
    local_queue,
    patch,
    started,
    stopped,
    waiting,
    workload_of,
)
from webhook.jobs.naming import job_workload_name
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import PROBE_NAMESPACE, LocalTurnstile

pytestmark = pytest.mark.integration

WORKLOAD = "workloads.kueue.x-k8s.io"


def _queue(cluster: LocalCluster, namespace: str, *, cpu: str = "2") -> str:
    """A flavor, a ClusterQueue with ``cpu`` of it and a LocalQueue ``q``; returns the ClusterQueue's name."""
    name = f"{namespace}-cq"
    apply(
        cluster,
        flavor(f"{namespace}-cpu", node_labels={"pool": namespace[-4:]}),
        cluster_queue(name, flavors={f"{namespace}-cpu": {"cpu": cpu}}),
        local_queue(namespace, "q", name),
    )
    return name


def _evicted(cluster: LocalCluster, namespace: str, job_name: str, reason: str) -> JSON:
    return dict(
        eventually(
            lambda: (
                (w := workload_of(cluster, namespace, job_name))
                and (condition(w, "Evicted") or {}).get("reason") == reason
                and is_true(w, "Evicted")
                and w
            ),
            what=f"the Workload of {job_name} to be evicted ({reason})",
        )
    )


def _admitted_count(cluster: LocalCluster, cq: str) -> object:
    return (get(cluster, "clusterqueue", cq).get("status") or {}).get("admittedWorkloads")


def test_deactivating_a_workload_stops_its_job_and_frees_the_quota(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    _queue(cluster, namespace)
    create(cluster, job(namespace, "first", queue="q", parallelism=2))
    started(cluster, namespace, "first")
    create(cluster, job(namespace, "second", queue="q", parallelism=2))
    waiting(cluster, namespace, "second", text="needs 2")

    patch(cluster, WORKLOAD, job_workload_name(namespace, "first"), {"spec": {"active": False}}, namespace)
    _evicted(cluster, namespace, "first", "Deactivated")
    stopped(cluster, namespace, "first")
    started(cluster, namespace, "second")
    inactive = waiting(cluster, namespace, "first")
    requeued = condition(inactive, "Requeued") or {}
    assert (requeued.get("status"), requeued.get("reason")) == ("False", "Deactivated")
    assert get(cluster, "job", "first", namespace)["spec"]["suspend"] is True


def test_maximum_execution_time_evicts_and_deactivates(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    _queue(cluster, namespace)
    create(cluster, job(namespace, "bounded", queue="q", labels={"kueue.x-k8s.io/max-exec-time-seconds": "3"}))
    started(cluster, namespace, "bounded")
    wl = workload_of(cluster, namespace, "bounded") or {}
    assert wl["spec"]["maximumExecutionTimeSeconds"] == 3
    # The admission time is read while the Workload is admitted: once evicted and released, its Admitted condition
    # turns False and its transition time becomes the release's.
    admitted = condition(wl, "Admitted") or {}
    assert admitted.get("status") == "True"
    admitted_at = admitted.get("lastTransitionTime")

    evicted = _evicted(cluster, namespace, "bounded", "DeactivatedDueToMaximumExecutionTimeExceeded")
    assert evicted["spec"]["active"] is False
    evicted_at = (condition(evicted, "Evicted") or {}).get("lastTransitionTime")
    assert admitted_at is not None
    assert evicted_at is not None
    ran = _seconds(str(evicted_at)) - _seconds(str(admitted_at))
    assert ran >= 3, f"evicted {ran}s after admission"
    stopped(cluster, namespace, "bounded")


def test_deleting_a_job_releases_its_quota(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    cq = _queue(cluster, namespace)
    create(cluster, job(namespace, "first", queue="q", parallelism=2))
    started(cluster, namespace, "first")
    create(cluster, job(namespace, "second", queue="q", parallelism=2))
    waiting(cluster, namespace, "second", text="needs 2")

    cluster.kubectl("delete", "job", "first", "-n", namespace, "--wait=false")
    eventually(lambda: workload_of(cluster, namespace, "first") is None, what="the deleted job's Workload to go")
    started(cluster, namespace, "second")
    eventually(lambda: _admitted_count(cluster, cq) == 1, what="one admitted workload in the ClusterQueue")


def test_a_job_that_slipped_past_the_webhook_is_suspended(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    _queue(cluster, namespace)
    turnstile.unregister()
    try:
        eventually(lambda: not _webhook_effective(cluster), what="the API server to stop calling the webhook")
        # Needs 4 cpu of 2: never admitted, so the only thing that may happen to it is being suspended.
        slipped = create(cluster, job(namespace, "sneaky", queue="q", parallelism=4))
        assert slipped["spec"]["suspend"] is False
    finally:
        turnstile.register((turnstile.workdir / "certs" / "ca.crt").read_bytes())
        eventually(lambda: _webhook_effective(cluster), what="the webhook to be called again")

    stopped(cluster, namespace, "sneaky")
    waiting(cluster, namespace, "sneaky", text="needs 4")
    assert get(cluster, "job", "sneaky", namespace)["spec"]["suspend"] is True


def test_stop_policies_of_a_cluster_queue(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    cq = _queue(cluster, namespace, cpu="4")
    create(cluster, job(namespace, "first", queue="q", parallelism=2))
    started(cluster, namespace, "first")

    # 1. Hold: what runs keeps running, nothing new is admitted.
    patch(cluster, "clusterqueue", cq, {"spec": {"stopPolicy": "Hold"}})
    create(cluster, job(namespace, "second", queue="q"))
    waiting(cluster, namespace, "second", text="stopped")
    assert get(cluster, "job", "first", namespace)["spec"]["suspend"] is False
    assert is_true(workload_of(cluster, namespace, "first") or {}, "Admitted")
    eventually(
        lambda: (condition(get(cluster, "clusterqueue", cq), "Active") or {}).get("status") == "False",
        what="the ClusterQueue to report itself inactive",
    )

    # 2. None: admission resumes.
    patch(cluster, "clusterqueue", cq, {"spec": {"stopPolicy": "None"}})
    started(cluster, namespace, "second")
    eventually(lambda: _admitted_count(cluster, cq) == 2, what="two admitted workloads")

    # 3. HoldAndDrain: admitted workloads are evicted and their jobs stopped.
    patch(cluster, "clusterqueue", cq, {"spec": {"stopPolicy": "HoldAndDrain"}})
    for name in ("first", "second"):
        _evicted(cluster, namespace, name, "ClusterQueueStopped")
        stopped(cluster, namespace, name)
    eventually(lambda: _admitted_count(cluster, cq) == 0, what="no admitted workloads")

    # 4. None again: both run again, on the queue's flavor.
    patch(cluster, "clusterqueue", cq, {"spec": {"stopPolicy": "None"}})
    for name in ("first", "second"):
        assert started(cluster, namespace, name)["spec"]["template"]["spec"]["nodeSelector"] == {"pool": namespace[-4:]}
        assert admission_flavors(workload_of(cluster, namespace, name) or {}) == {"cpu": f"{namespace}-cpu"}


def _seconds(stamp: str) -> float:
    return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def _webhook_effective(cluster: LocalCluster) -> bool:
    """Whether the API server calls Turnstile's mutating webhook now: a dry-run Job comes back suspended."""
    probe = job(PROBE_NAMESPACE, "probe", queue="x")
    done = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(probe), check=False)
    return done.returncode == 0 and json.loads(done.stdout)["spec"].get("suspend") is True
