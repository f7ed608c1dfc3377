"""``turnstile fit -f`` before a job exists says what ``turnstile why`` says once it is created (the demo's jobs).

The demo's ClusterQueue (manifests/samples, under names of this test's own) and its first three jobs
(hack/demo-jobs.yaml) are admitted; then the fourth, train-c (4 GPUs, 1 free), is asked about before it is
created and explained after: the same engine (``core.fit``) must give the same answer through both commands.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kube import JSON, apply, create, eventually, get, waiting
from webhook.local.cluster import REPO_ROOT, LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

DEMO_JOBS = REPO_ROOT / "hack" / "demo-jobs.yaml"
SAMPLES = REPO_ROOT / "manifests" / "samples"


def turnstile_cli(cluster: LocalCluster, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "webhook", *args, f"--kubeconfig={cluster.kubeconfig}", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def demo_queue(namespace: str) -> list[JSON]:
    """The samples' flavors and ClusterQueue renamed for this test, and its LocalQueue ``user-queue``."""
    suffix = namespace[-8:]
    flavors = [d for d in yaml.safe_load_all((SAMPLES / "resource-flavors.yaml").read_text()) if d]
    renamed = {f["metadata"]["name"]: f"{f['metadata']['name']}-{suffix}" for f in flavors}
    for f in flavors:
        f["metadata"]["name"] = renamed[f["metadata"]["name"]]
    cq = yaml.safe_load((SAMPLES / "cluster-queue.yaml").read_text())
    cq["metadata"]["name"] = f"cluster-queue-{suffix}"
    cq["spec"]["cohortName"] = f"research-{suffix}"
    for group in cq["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            flavor["name"] = renamed[flavor["name"]]
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": namespace},
        "spec": {"clusterQueue": cq["metadata"]["name"]},
    }
    return [*flavors, cq, lq]


def demo_job(name: str, namespace: str) -> JSON:
    job = next(d for d in yaml.safe_load_all(DEMO_JOBS.read_text()) if d and d["metadata"]["name"] == name)
    job["metadata"]["namespace"] = namespace
    return dict(job)


def test_fit_before_equals_why_after(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str, tmp_path: Path
) -> None:
    apply(cluster, *demo_queue(namespace))
    for name in ("train-a", "train-b", "preprocess"):
        create(cluster, demo_job(name, namespace))
    for name in ("train-a", "train-b", "preprocess"):
        eventually(
            lambda n=name: get(cluster, "job", n, namespace)["spec"].get("suspend") is False,
            what=f"{name} to be admitted",
        )
    manifest = tmp_path / "train-c.yaml"
    manifest.write_text(yaml.safe_dump(demo_job("train-c", namespace)))

    before = turnstile_cli(cluster, "fit", "-f", str(manifest), "-n", namespace)
    fit = before["fit"]
    assert fit["verdict"] == "Pending"
    assert (fit["position"], fit["queueLength"]) == (1, 1)
    gpu = [m for m in fit["missing"] if m["resource"] == "nvidia.com/gpu"]
    assert [(m["needed"], m["available"], m["missing"]) for m in gpu] == [("4", "1", "3")]

    create(cluster, demo_job("train-c", namespace))
    waiting(cluster, namespace, "train-c")
    after = turnstile_cli(cluster, "why", "train-c", "-n", namespace)
    assert after["fit"] == fit
    assert after["workload"]["position"] == fit["position"]
