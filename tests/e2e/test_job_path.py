"""The path of one job through Turnstile, against the real API server, as a user drives it with kubectl."""

from __future__ import annotations

import json

import pytest

from tests.e2e.kube import (
    apply,
    cluster_queue,
    create,
    eventually,
    finish_job_pods,
    flavor,
    get,
    is_true,
    job,
    local_queue,
)
from webhook.jobs.naming import job_workload_name
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

SPOT_TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}


def test_one_job_start_to_finish(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    cq = f"cq-{namespace}"
    apply(
        cluster,
        flavor("spot-e2e", node_labels={"instance-type": "spot"}, tolerations=[SPOT_TOLERATION]),
        cluster_queue(cq, flavors={"spot-e2e": {"cpu": "4", "memory": "8Gi"}}),
        local_queue(namespace, "user-queue", cq),
    )
    created = create(cluster, job(namespace, "pi", queue="user-queue", parallelism=2, requests={"cpu": "1"}))
    # 1. The webhook suspended it and stamped its Workload's name before it was stored.
    assert created["spec"]["suspend"] is True
    workload_name = job_workload_name(namespace, "pi")
    assert created["metadata"]["annotations"]["turnstile.x-k8s.io/workload-name"] == workload_name

    # 2. The reconciler created the Workload, owned by the Job, and the scheduler admitted it.
    wl = eventually(
        lambda: (
            (w := _maybe(cluster, "workloads.kueue.x-k8s.io", workload_name, namespace))
            and is_true(w, "Admitted")
            and w
        ),
        what="the Workload to be admitted",
    )
    assert wl["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert wl["status"]["admission"] == {
        "clusterQueue": cq,
        "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "spot-e2e"}, "resourceUsage": {"cpu": "2"}, "count": 2}
        ],
    }

    # 3. The Job was released with the flavor's node labels and tolerations on its pod template.
    running = eventually(
        lambda: (j := get(cluster, "job", "pi", namespace))["spec"]["suspend"] is False and j, what="the Job to start"
    )
    template = running["spec"]["template"]["spec"]
    assert template["nodeSelector"] == {"instance-type": "spot"}
    assert SPOT_TOLERATION in template["tolerations"]

    # 4. ClusterQueue status shows the usage.
    eventually(
        lambda: (get(cluster, "clusterqueue", cq).get("status") or {}).get("admittedWorkloads") == 1,
        what="ClusterQueue status",
    )

    # 5. The pods succeed, the Job completes, the Workload finishes and the quota is free again.
    eventually(lambda: finish_job_pods(cluster, namespace, "pi") == 2, what="the Job's pods to exist")
    eventually(lambda: is_true(get(cluster, "job", "pi", namespace), "Complete"), what="the Job to complete")
    done = eventually(
        lambda: (
            (w := get(cluster, "workloads.kueue.x-k8s.io", workload_name, namespace)) and is_true(w, "Finished") and w
        ),
        what="the Workload to finish",
    )
    assert done["status"]["conditions"]
    eventually(
        lambda: (get(cluster, "clusterqueue", cq).get("status") or {}).get("admittedWorkloads") == 0,
        what="the quota to be released",
    )
    events = json.loads(cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    reasons = {e["reason"] for e in events if e["involvedObject"]["name"] in ("pi", workload_name)}
    assert {"CreatedWorkload", "QuotaReserved", "Admitted", "Started", "Finished"} <= reasons


def test_dry_run_creates_nothing(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    answer = create(cluster, job(namespace, "dry", queue="user-queue"), "--dry-run=server")
    assert answer["spec"]["suspend"] is True
    assert cluster.kubectl("get", "job", "dry", "-n", namespace, check=False).returncode != 0
    assert cluster.kubectl("get", "workloads", "-n", namespace, "-o", "name").stdout.strip() == ""


def test_unsuspending_an_unadmitted_job_is_refused(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    create(cluster, job(namespace, "sneaky", queue="no-such-queue"))
    refused = cluster.kubectl(
        "patch", "job", "sneaky", "-n", namespace, "-p", '{"spec":{"suspend":false}}', check=False
    )
    assert refused.returncode != 0
    assert "admitted" in refused.stderr
    assert get(cluster, "job", "sneaky", namespace)["spec"]["suspend"] is True


def _maybe(cluster: LocalCluster, kind: str, name: str, namespace: str) -> dict[str, object] | None:
    done = cluster.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None
