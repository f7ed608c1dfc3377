"""kube-apiserver CPU per Workload status write, by the shape of the request: the whole object as the body, its
identity and status only (what Turnstile sends), a JSON merge patch of the status, and a server-side apply of it.

The status endpoint keeps the stored spec and metadata and takes only the status from a body (tests/contract:
``test_a_status_replace_needs_only_the_objects_identity_and_its_status``); what else the body carries the API
server still decodes, prunes and defaults first. Turnstile's status writes send the identity (name, namespace,
uid, resourceVersion) and the status: this bench sends what ``webhook.jobs.workload.status_body`` builds. A
merge patch carries the status and the resourceVersion read (optimistic, as our PUT); an apply carries the
status under a field manager of its own, forced, as Kueue writes admissions and its perf runner's finishes. It
starts one bare control plane (etcd, kube-apiserver) with our CRDs, creates ``--workloads`` Workloads (the
baseline's shape, or with ``--job-template`` a pod template shaped like a real Job's: containers with env, volume
mounts, probes and an affinity), reserves quota for each, then rewrites their status ``--writes`` times per round,
the shapes taking turns for ``--rounds`` rounds, and reads the API server's CPU time around each round.
Medians are printed with the machine.

Usage: ``.venv/bin/python -m bench.statusbody [--job-template]``. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import CLASSES, crds_without_conversion, scratch, workload
from bench.crdrules import GROUP, NAMESPACE, AdminApi, reserved_status
from bench.e2e import cpu_seconds
from bench.machine import describe
from webhook.api.views import WorkloadRecord
from webhook.jobs.workload import status_body
from webhook.local.cluster import LocalCluster

SHAPES = ("whole object", "identity and status", "merge patch", "apply")
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"  # JSON is YAML


def job_template() -> dict[str, Any]:
    """A pod template of the size a real Job's has (about 3 KB as JSON)."""
    env = [{"name": f"SETTING_{i}", "value": f"value-{i}-" + "x" * 24} for i in range(20)]
    mounts = [{"name": f"data-{i}", "mountPath": f"/data/{i}", "readOnly": i % 2 == 0} for i in range(6)]
    container = {
        "name": "main",
        "image": "registry.example.com/team/trainer:2026.12.1",
        "command": ["python", "-m", "trainer", "--epochs", "10"],
        "env": env,
        "volumeMounts": mounts,
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}},
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch", "batch-spot"]}]}
                ]
            }
        }
    }
    volumes = [{"name": f"data-{i}", "emptyDir": {}} for i in range(6)]
    spec = {"containers": [container], "volumes": volumes, "affinity": affinity, "restartPolicy": "Never"}
    return {"metadata": {"labels": {"app": "trainer"}}, "spec": spec}


async def _measure(cluster: LocalCluster, apiserver: int, args: argparse.Namespace) -> dict[str, list[float]]:
    spent: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    async with AdminApi(cluster) as api:
        call = api.call
        await call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        latest: list[dict[str, Any]] = []
        for i in range(args.workloads):
            body = workload(f"w-{i}", NAMESPACE, CLASSES[i % 3])
            if args.job_template:
                body["spec"]["podSets"][0]["template"] = job_template()
            latest.append(await call("POST", f"{GROUP}/namespaces/{NAMESPACE}/workloads", body))

        async def rewrite(i: int, n: int, shape: str) -> None:
            obj, status = latest[i], reserved_status(n)
            path = f"{GROUP}/namespaces/{NAMESPACE}/workloads/{obj['metadata']['name']}/status"
            if shape == "whole object":
                latest[i] = await call("PUT", path, obj | {"status": status})
            elif shape == "identity and status":
                latest[i] = await call("PUT", path, status_body(WorkloadRecord.of(obj), status))
            elif shape == "merge patch":  # optimistic like the others: the resourceVersion read
                patch = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, "status": status}
                latest[i] = await call("PATCH", path, patch, MERGE)
            else:  # server-side apply of the status alone, as Kueue writes an admission (forced, no resourceVersion)
                meta = {"name": obj["metadata"]["name"], "namespace": NAMESPACE}
                applied = {"apiVersion": obj["apiVersion"], "kind": "Workload", "metadata": meta, "status": status}
                latest[i] = await call("PATCH", path + "?fieldManager=bench&force=true", applied, APPLY)

        await asyncio.gather(*(rewrite(i, 0, SHAPES[0]) for i in range(args.workloads)))
        for round_ in range(args.rounds):
            for shape in SHAPES[round_ % len(SHAPES) :] + SHAPES[: round_ % len(SHAPES)]:
                before = cpu_seconds(apiserver)
                for start in range(0, args.writes, args.workloads):
                    count = min(args.workloads, args.writes - start)
                    await asyncio.gather(*(rewrite(i, start + 1, shape) for i in range(count)))
                spent[shape].append((cpu_seconds(apiserver) - before) * 1000 / args.writes)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--writes", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--job-template", action="store_true", help="pod templates shaped like a real Job's")
    args = parser.parse_args()
    print(f"machine: {describe()}")
    with tempfile.TemporaryDirectory(prefix="turnstile-statusbody-", dir=scratch()) as tmp:
        crds = crds_without_conversion(Path(tmp) / "crds")
        cluster = LocalCluster(Path(tmp) / "cluster", controller_manager=False, crds=crds)
        state = cluster.start()
        try:
            spent = asyncio.run(_measure(cluster, state.pids["kube-apiserver"], args))
        finally:
            cluster.stop()
    template = "a real Job's pod template" if args.job_template else "the baseline's pod template"
    print(f"{args.workloads} Workloads with {template}; {args.writes} status writes per round, {args.rounds} rounds")
    medians = {shape: statistics.median(values) for shape, values in spent.items()}
    for shape, values in spent.items():
        listed = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {shape:20s}: kube-apiserver CPU per write, median {medians[shape]:.2f} ms ({listed})")
    for shape in SHAPES[1:]:
        print(f"  ratio {shape} / whole object: {medians[shape] / medians[SHAPES[0]]:.2f}")


if __name__ == "__main__":
    main()
