"""Kueue's published v1beta2 examples apply unchanged, and Kueue's quick start runs end to end on Turnstile.

The files in tests/fixtures/kueue-examples are Kueue's own, byte for byte (see its README): the quick start's
setup (ResourceFlavor, ClusterQueue, LocalQueue in namespace default), its sample Job, and the ResourceFlavor and
WorkloadPriorityClass examples of the documentation. The Job is admitted, released, and once its pods end the
Workload finishes and the quota is free again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.e2e.kube import eventually, finish_job_pods, get, is_true, maybe_get
from webhook.jobs.naming import job_workload_name
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "kueue-examples"
CLEANUP = [
    ("localqueue", "user-queue", "default"),
    ("clusterqueue", "cluster-queue", "default"),
    ("resourceflavor", "default-flavor", "default"),
]


@pytest.mark.parametrize(
    "example", ["resource-flavor-taints.yaml", "resource-flavor-tolerations.yaml", "workload-priority-class.yaml"]
)
def test_kueue_documentation_example_applies_unchanged(
    cluster: LocalCluster, turnstile: LocalTurnstile, example: str
) -> None:
    done = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(EXAMPLES / example), check=False)

    assert done.returncode == 0, done.stderr
    assert "serverside-applied (server dry run)" in done.stdout


def test_kueue_quick_start_runs_end_to_end(cluster: LocalCluster, turnstile: LocalTurnstile) -> None:
    setup, sample = EXAMPLES / "single-clusterqueue-setup.yaml", EXAMPLES / "sample-job.yaml"
    assert {d["apiVersion"] for d in yaml.safe_load_all(setup.read_text())} == {"kueue.x-k8s.io/v1beta2"}
    applied = cluster.kubectl("apply", "-f", str(setup), check=False)
    assert applied.returncode == 0, applied.stderr
    job_name = ""
    try:
        # 1. kubectl create, as the quick start says (the Job uses generateName).
        created = json.loads(cluster.kubectl("create", "-f", str(sample), "-o", "json").stdout)
        job_name = created["metadata"]["name"]
        assert created["spec"]["suspend"] is True

        # 2. Admitted: a v1beta2 Workload with its admission, and the Job released.
        workload_name = job_workload_name("default", job_name)  # generateName: no name to stamp at admission
        wl = eventually(
            lambda: (
                (w := maybe_get(cluster, "workloads.v1beta2.kueue.x-k8s.io", workload_name, "default"))
                and is_true(w, "Admitted")
                and w
            ),
            what="the quick start's Workload to be admitted",
        )
        assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        assert wl["status"]["admission"]["clusterQueue"] == "cluster-queue"
        assert wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "3", "memory": "600Mi"}
        eventually(lambda: get(cluster, "job", job_name, "default")["spec"]["suspend"] is False, what="the Job to run")
        lq = eventually(
            lambda: (
                (q := get(cluster, "localqueues.v1beta2.kueue.x-k8s.io", "user-queue", "default"))
                and (q.get("status") or {}).get("admittedWorkloads") == 1
                and q
            ),
            what="LocalQueue status",
        )
        assert lq["status"]["flavorsUsage"][0]["name"] == "default-flavor"

        # 3. Its pods end, the Job completes, the Workload finishes and the ClusterQueue is empty again.
        eventually(lambda: finish_job_pods(cluster, "default", job_name) == 3, what="the Job's 3 pods")
        eventually(
            lambda: is_true(get(cluster, "workloads.v1beta2.kueue.x-k8s.io", workload_name, "default"), "Finished"),
            what="the Workload to finish",
        )
        eventually(
            lambda: (get(cluster, "clusterqueue", "cluster-queue").get("status") or {}).get("admittedWorkloads") == 0,
            what="the quota to be released",
        )
    finally:
        # The names are Kueue's and other tests use them too, so the objects must really go. The mutating webhook
        # puts kueue.x-k8s.io/resource-in-use on queue objects and nothing in Turnstile removes it yet: as an
        # admin would, drop it by hand.
        if job_name:
            cluster.kubectl("delete", "job", job_name, "-n", "default", "--ignore-not-found", check=False)
        cluster.kubectl("delete", "-f", str(setup), "--ignore-not-found", "--wait=false", check=False)
        unfinalize = ["--type=merge", "-p", '{"metadata": {"finalizers": null}}']
        for kind, name, namespace in CLEANUP:
            cluster.kubectl("patch", kind, name, "-n", namespace, *unfinalize, check=False)
        cluster.kubectl("delete", "-f", str(setup), "--ignore-not-found", "--timeout=30s", check=False)
