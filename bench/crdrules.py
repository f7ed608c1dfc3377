"""kube-apiserver CPU per Workload status write under our CRD, against the CRD of another revision.

Every write of a Workload, the status writes of each admission and each finish included, runs the CRD's CEL rules
on the API server. This starts a bare control plane (etcd, kube-apiserver) per CRD, creates ``--workloads``
Workloads shaped like the baseline's (``bench.baseline.workload``), reserves quota for each, then rewrites their
status ``--writes`` times (8 at a time, a condition's message changing as an admission or a finish changes it) and
reads the API server's CPU time around those writes. The two CRDs alternate for ``--rounds`` rounds on fresh
control planes; medians are printed with the machine.

Usage: ``.venv/bin/python -m bench.crdrules --against 22238f1`` (the revision whose manifests/crds/workloads.yaml
is compared; the working tree's is the other). Printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.baseline import CLASSES, crds_without_conversion, scratch, workload
from bench.e2e import cpu_seconds
from bench.machine import describe
from webhook.local.cluster import REPO_ROOT, LocalCluster

NAMESPACE = "crdrules"
GROUP = "/apis/kueue.x-k8s.io/v1beta2"


def crds_at(revision: str, into: Path) -> Path:
    """Our CRD directory with workloads.yaml as ``revision`` had it, without a conversion webhook as
    ``bench.baseline`` installs them (one the API server cannot reach makes its v1beta1 watch caches list again and
    again, which would count in the CPU measured here)."""
    old = subprocess.run(
        ["git", "show", f"{revision}:manifests/crds/workloads.yaml"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return crds_without_conversion(into, {"workloads.yaml": old})


def condition(kind: str, message: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": "True",
        "reason": kind,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def reserved_status(n: int) -> dict[str, Any]:
    """A status holding quota, its QuotaReserved message numbered ``n`` (each write changes it)."""
    return {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "count": 1, "flavors": {"cpu": "rf"}}],
        },
        "conditions": [condition("QuotaReserved", f"write {n}"), condition("Admitted", "admitted")],
    }


class AdminApi:
    """The control plane's API as its admin (client certificate), at most 8 requests at a time."""

    def __init__(self, cluster: LocalCluster) -> None:
        context = ssl.create_default_context(cafile=str(cluster.pki_dir / "ca.crt"))
        context.load_cert_chain(cluster.pki_dir / "admin.crt", cluster.pki_dir / "admin.key")
        self.base = cluster.server
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8, ssl=context))

    async def __aenter__(self) -> AdminApi:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()

    async def call(
        self, method: str, path: str, body: object, content_type: str = "application/json"
    ) -> dict[str, Any]:
        data = json.dumps(body)
        async with self.session.request(
            method, self.base + path, data=data, headers={"Content-Type": content_type}
        ) as r:
            answer: dict[str, Any] = await r.json()
            if r.status >= 300:
                raise RuntimeError(f"{method} {path}: {r.status} {answer.get('message')}")
            return answer


async def _measure(
    cluster: LocalCluster, apiserver: int, workloads: int, writes: int, profile: Path | None = None
) -> float:
    """The API server's CPU milliseconds per status write; ``profile``: its CPU profile over the writes, saved
    there (``go tool pprof -top -cum FILE``)."""
    async with AdminApi(cluster) as api:
        call = api.call
        await call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        latest: list[dict[str, Any]] = []
        for i in range(workloads):
            created = await call(
                "POST", f"{GROUP}/namespaces/{NAMESPACE}/workloads", workload(f"w-{i}", NAMESPACE, CLASSES[i % 3])
            )
            latest.append(created)

        async def rewrite(i: int, n: int) -> None:
            obj = latest[i]
            name = obj["metadata"]["name"]
            path = f"{GROUP}/namespaces/{NAMESPACE}/workloads/{name}/status"
            latest[i] = await call("PUT", path, obj | {"status": reserved_status(n)})

        await asyncio.gather(*(rewrite(i, 0) for i in range(workloads)))  # every one holds quota from here on

        async def profiled(seconds: int) -> None:
            assert profile is not None
            async with api.session.get(f"{api.base}/debug/pprof/profile?seconds={seconds}") as r:
                data = await r.read()
            await asyncio.to_thread(profile.write_bytes, data)

        spy = asyncio.ensure_future(profiled(10)) if profile is not None else None
        before = cpu_seconds(apiserver)
        for start in range(0, writes, workloads):
            await asyncio.gather(*(rewrite(i, start + 1) for i in range(min(workloads, writes - start))))
        spent = (cpu_seconds(apiserver) - before) * 1000 / writes
        if spy is not None:
            await spy
        return spent


def one(crds: Path, workloads: int, writes: int, profile: Path | None = None) -> float:
    with tempfile.TemporaryDirectory(prefix="turnstile-crdrules-", dir=scratch()) as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", controller_manager=False, crds=crds)
        state = cluster.start()
        try:
            return asyncio.run(_measure(cluster, state.pids["kube-apiserver"], workloads, writes, profile))
        finally:
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the git revision whose Workload CRD is compared")
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--writes", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=Path, default=None, help="kube-apiserver's CPU profile, first round's")
    args = parser.parse_args()
    print(describe())
    with tempfile.TemporaryDirectory() as tmp:
        other = crds_at(args.against, Path(tmp) / "crds")
        ours = crds_without_conversion(Path(tmp) / "ours")
        figures: dict[str, list[float]] = {"working tree": [], args.against: []}
        for _ in range(args.rounds):
            for label, crds in (("working tree", ours), (args.against, other)):
                started = time.monotonic()
                profile = args.profile if label == "working tree" and not figures[label] else None
                figures[label].append(one(crds, args.workloads, args.writes, profile))
                print(f"  {label}: {figures[label][-1]:.3f} ms per write ({time.monotonic() - started:.0f} s)")
    for label, values in figures.items():
        print(f"kube-apiserver CPU per status write, {label}: median {statistics.median(values):.3f} ms")
    mine, theirs = (statistics.median(v) for v in figures.values())
    print(f"ratio working tree / {args.against}: {mine / theirs:.2f}")


if __name__ == "__main__":
    main()
