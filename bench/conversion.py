"""Conversion webhook throughput: ConversionReviews of 500 Workloads over TLS, and a 5,000-Workload v1beta1 list.

Part 1 runs Turnstile's webhook server (``AdmissionServer``: the admission routes and ``/convert``, on a static
cluster view, since only conversion is measured) in a child process and sends it ConversionReviews of 500
admitted Workloads each (v1beta1 to v1beta2, as a write of old objects does, and v1beta2 to v1beta1, as a v1beta1
read does) from one keep-alive TLS connection, back to back; ``--objects N`` sets how many per review (1: what the
API server's v1beta1 watch cache sends for each write of a Workload when v1beta1 is served through the webhook).
It reports requests/s, Workloads/s, p50 and p99 per direction (medians of the trials). Part 2 (skipped with
``--no-apiserver``) starts a local kube-apiserver + etcd, points the CRDs' conversion webhook at that same
process, stores 5,000 Workloads (v1beta2) and times listing them all as v1beta2 (no conversion) and as v1beta1
(every item through ``/convert``). Results are printed, never asserted.
Usage: ``.venv/bin/python -m bench.conversion [--trials 3 --requests 40 --objects 500 --no-apiserver]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.admission import free_port, machine, percentile, wait_ready

BATCH = 500
LIST_SIZE = 5_000
V1, V2 = "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"


def workload(i: int, version: str, namespace: str = "bench") -> dict[str, Any]:
    """An admitted Workload as Turnstile writes it: one pod set, a priority class, status with conditions."""
    spec: dict[str, Any] = {
        "queueName": "user-queue",
        "priority": 100,
        "podSets": [
            {
                "name": "main",
                "count": 4,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                    }
                },
            }
        ],
    }
    if version == V1:
        spec |= {"priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass", "priorityClassName": "high"}
    else:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    when = "2026-01-01T00:00:00Z"
    status = {
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": "m", "lastTransitionTime": when}
            for t in ("QuotaReserved", "Admitted")
        ],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "4"}, "count": 4}
            ],
        },
    }
    meta = {"name": f"wl-{i}", "namespace": namespace, "uid": f"00000000-0000-4000-8000-{i:012d}"}
    return {"apiVersion": version, "kind": "Workload", "metadata": meta, "spec": spec, "status": status}


def review(source: str, desired: str, objects: int = BATCH) -> bytes:
    request = {
        "uid": "00000000-0000-4000-8000-000000000001",
        "desiredAPIVersion": desired,
        "objects": [workload(i, source) for i in range(objects)],
    }
    return orjson.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request})


async def trial(session: aiohttp.ClientSession, url: str, body: bytes, requests: int) -> tuple[float, list[float]]:
    latencies = []
    started = time.perf_counter()
    for _ in range(requests):
        t0 = time.perf_counter()
        async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
            answer = await resp.read()
        latencies.append((time.perf_counter() - t0) * 1000)
        if resp.status != 200 or b'"Success"' not in answer:
            raise RuntimeError(f"conversion failed: {resp.status} {answer[:300]!r}")
    return requests / (time.perf_counter() - started), latencies


async def webhook_part(base: str, context: ssl.SSLContext, *, trials: int, requests: int, objects: int) -> None:
    print(f"{'direction':<22} {'req/s':>7} {'Workloads/s':>12} {'p50 ms':>8} {'p99 ms':>8}  (medians of {trials})")
    connector = aiohttp.TCPConnector(ssl=context, limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        for source, desired in ((V1, V2), (V2, V1)):
            body = review(source, desired, objects)
            await trial(session, base + "/convert", body, 3)  # warm up
            results = [await trial(session, base + "/convert", body, requests) for _ in range(trials)]
            rate = statistics.median(r for r, _ in results)
            p50 = statistics.median(percentile(lat, 0.50) for _, lat in results)
            p99 = statistics.median(percentile(lat, 0.99) for _, lat in results)
            label = f"{source.split('/')[1]} -> {desired.split('/')[1]}"
            size = f"{len(body) // 1024} KiB" if len(body) >= 1024 else f"{len(body)} B"
            print(f"{label:<22} {rate:>7.1f} {rate * objects:>12.0f} {p50:>8.1f} {p99:>8.1f}  ({size})")


def apiserver_part(tmp: Path, certs: Any, port: int, trials: int) -> None:
    from webhook.admission.conversionconfig import CONVERTED_CRDS, conversion_patch
    from webhook.local.client import LocalClient
    from webhook.local.cluster import LocalCluster

    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp
    cluster = LocalCluster(base / f"turnstile-bench-conversion-{os.getpid()}")
    cluster.start()
    try:
        patch = json.dumps(conversion_patch(ca_bundle=certs.ca_pem, url=f"https://127.0.0.1:{port}"))
        for crd in CONVERTED_CRDS:
            cluster.kubectl("patch", "crd", crd, "--type=merge", "-p", patch)
        cluster.kubectl("create", "namespace", "bench")
        client = LocalClient(cluster, timeout=120)
        path = "/apis/kueue.x-k8s.io/{v}/namespaces/bench/workloads"
        started = time.perf_counter()

        def create(i: int) -> None:
            body = workload(i, V2)
            body.pop("status")
            body["metadata"].pop("uid")
            client.create(path.format(v="v1beta2"), body)

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(create, range(LIST_SIZE)))
        print(f"stored {LIST_SIZE} Workloads in {time.perf_counter() - started:.1f}s")
        for version in ("v1beta2", "v1beta1"):
            client.get(path.format(v=version))  # warm up
            times = []
            for _ in range(max(trials, 3)):
                t0 = time.perf_counter()
                items = client.get(path.format(v=version))["items"]
                times.append(time.perf_counter() - t0)
                if len(items) != LIST_SIZE or items[0]["apiVersion"] != f"kueue.x-k8s.io/{version}":
                    raise RuntimeError(f"unexpected list: {len(items)} items")
            print(
                f"list {LIST_SIZE} Workloads as {version}: median {statistics.median(times) * 1000:.0f} ms "
                f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}; "
                f"{'through /convert' if version == 'v1beta1' else 'no conversion'})"
            )
        client.close()
    finally:
        cluster.stop()


async def run(args: argparse.Namespace) -> None:
    from webhook import tls

    with tempfile.TemporaryDirectory() as tmp:
        certs = tls.issue_webhook_certificates(Path(tmp), ["127.0.0.1"])
        port = free_port()
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measurement
            [sys.executable, "-m", "bench.conversion", "--serve", tmp, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            context = ssl.create_default_context(cadata=certs.ca_pem.decode())
            base = f"https://127.0.0.1:{port}"
            await wait_ready(base, context, server)
            print(f"machine: {machine()}")
            print(f"server: one webhook server process; {args.objects} admitted Workloads per ConversionReview")
            await webhook_part(base, context, trials=args.trials, requests=args.requests, objects=args.objects)
            if not args.no_apiserver:
                await asyncio.to_thread(apiserver_part, Path(tmp), certs, port, args.trials)
        finally:
            server.terminate()
            server.wait(timeout=10)


async def serve(cert_dir: Path, port: int) -> None:
    from webhook.admission.options import AdmissionOptions
    from webhook.admission.view import StaticView
    from webhook.server import serve as serve_webhooks

    await serve_webhooks(
        view=StaticView(),
        options=AdmissionOptions(),
        cert_file=cert_dir / "tls.crt",
        key_file=cert_dir / "tls.key",
        host="127.0.0.1",
        port=port,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--serve", metavar="CERT_DIR", help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=3, help="trials per measurement (medians are reported)")
    parser.add_argument("--requests", type=int, default=40, help="ConversionReviews per trial")
    parser.add_argument("--no-apiserver", action="store_true", help="skip the 5,000-Workload list through the API")
    parser.add_argument(
        "--objects",
        type=int,
        default=BATCH,
        help="Workloads per ConversionReview (1: what the API server's v1beta1 watch cache sends for each write)",
    )
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(Path(args.serve), args.port))
        return
    started = time.monotonic()
    asyncio.run(run(args))
    print(f"total {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
