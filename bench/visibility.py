"""Visibility API response time with 10,000 pending workloads, through the real API server's aggregation layer.

Starts a local kube-apiserver + etcd (with the aggregation-layer flags), stores a ClusterQueue with no quota, four
LocalQueues and 10,000 Workloads (all pending), then starts Turnstile, which registers its APIServices. It times
``GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/<cq>/pendingworkloads`` as the admin through the API
server: with the default limit (1,000 items), with every item, and a LocalQueue's list; "steady" when nothing
changed since the last answer, "after a change" when a Workload was just modified (the scheduler's pass over the
cache is recomputed first). Results are printed, never asserted.
Usage: ``.venv/bin/python -m bench.visibility [--workloads 10000 --trials 15]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.admission import machine
from webhook.local.client import LocalClient
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

API = "/apis/visibility.kueue.x-k8s.io/v1beta2"
NS = "bench"


def workload(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i:05d}", "namespace": NS},
        "spec": {
            "queueName": f"lq-{i % 4}",
            "priority": i % 3,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                        }
                    },
                }
            ],
        },
    }


def timed(client: LocalClient, path: str, trials: int, *, touch: LocalClient | None = None) -> tuple[list[float], int]:
    times, count = [], 0
    for t in range(trials):
        if touch is not None:
            touch.request(
                "PATCH",
                f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads/wl-00000",
                {"metadata": {"labels": {"bench-touch": str(t)}}},
                content_type="application/merge-patch+json",
            )
            time.sleep(0.6)  # past the index's minimum interval, and the watch has delivered the change
        t0 = time.perf_counter()
        count = len(client.get(path)["items"])
        times.append(time.perf_counter() - t0)
    return times, count


def report(what: str, times: list[float], count: int) -> None:
    ms = sorted(t * 1000 for t in times)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"{what}: {count} items, median {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, max {ms[-1]:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args()
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    cluster = LocalCluster(base / f"turnstile-bench-visibility-{os.getpid()}", controller_manager=False)
    cluster.start()
    local: LocalTurnstile | None = None
    try:
        objects = [
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "0"}]}],
                        }
                    ],
                },
            },
            *(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": f"lq-{i}", "namespace": NS},
                    "spec": {"clusterQueue": "cq"},
                }
                for i in range(4)
            ),
        ]
        cluster.kubectl("create", "namespace", NS)
        cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        client = LocalClient(cluster, timeout=120)
        started = time.perf_counter()
        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda i: client.create(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads", workload(i)),
                    range(args.workloads),
                )
            )
        print(f"stored {args.workloads} Workloads in {time.perf_counter() - started:.1f}s")
        # Turnstile's default lease timings: the local ones (6 s) are too short for a start with 10,000 workloads
        # on a loaded machine, and losing the lease stops the process.
        lease = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"}
        local = LocalTurnstile(
            cluster,
            Path(tempfile.mkdtemp(prefix="turnstile-bench-visibility-")),
            config={"leaderElection": lease},
        )
        local.start(timeout=300)
        cq_path = f"{API}/clusterqueues/cq/pendingworkloads"
        deadline = time.monotonic() + 300
        while len(client.get(f"{cq_path}?limit=100000")["items"]) < args.workloads:
            if time.monotonic() > deadline:
                raise RuntimeError("Turnstile never listed every pending workload")
            time.sleep(1)

        # Steady means Turnstile has written every pending reason (a bounded number per pass), so the cache is quiet.
        def explained() -> int:
            listed = client.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads")["items"]
            return sum(1 for w in listed if (w.get("status") or {}).get("conditions"))

        while explained() < args.workloads and time.monotonic() < deadline + 300:
            time.sleep(5)
        print(f"machine: {machine()}")
        report("ClusterQueue, default limit (1000), steady", *timed(client, cq_path, args.trials))
        report("ClusterQueue, limit=100000 (all), steady", *timed(client, f"{cq_path}?limit=100000", args.trials))
        lq_path = f"{API}/namespaces/{NS}/localqueues/lq-1/pendingworkloads"
        report("LocalQueue lq-1, default limit, steady", *timed(client, lq_path, args.trials))
        report(
            "ClusterQueue, default limit, after a change",
            *timed(client, cq_path, max(3, args.trials // 3), touch=client),
        )
        client.close()
    finally:
        if local is not None:
            local.stop()
        cluster.stop()


if __name__ == "__main__":
    main()
