"""End to end: 1,000 Jobs through 30 ClusterQueues, from API create to all admitted, against a real API server.

Starts its own control plane (etcd, kube-apiserver, kube-controller-manager for the Job controller, kube-scheduler
and kwok with ``NODES`` simulated nodes of ``NODE_CPU`` CPU each: more than all the quota, so every admitted pod can
be placed) and one ``turnstile run`` process in a temporary directory, on loopback only. The shape is Kueue's
scheduler baseline (``test/performance/scheduler/configs/baseline``) scaled down: 5 cohorts x 6 ClusterQueues,
each with nominal 20 CPU and borrowingLimit 100; Jobs of one pod each, 70% small (1 CPU), 20% medium (5 CPU), 10%
large (20 CPU), spread round-robin over the 30 LocalQueues (3,700 CPU asked for, 600 CPU of quota: not all fit at
once). No preemption, no priorities (the baseline's are left out).

Jobs are created through the API (POST, 8 client threads, each create goes through Turnstile's mutating and
validating webhooks), in a seeded shuffled order. A job "runs" for ``--runtime`` seconds: kube-scheduler binds its
pod to a node, kwok makes it Running and, that long later (the pod's ``turnstile.x-k8s.io/run-time`` annotation),
Succeeded; the Job controller completes the Job, and Turnstile finishes its Workload and frees the quota. The
clock starts at the first create and stops when every Workload has been admitted at least once (read from the API
server every 500 ms); the run then waits for every Workload to finish. Reported: wall time, admissions per second,
time to create, CPU seconds (utime + stime from /proc/<pid>/stat) of kube-apiserver, etcd,
kube-controller-manager, kube-scheduler, kwok, Turnstile and this driver over the measured interval, Turnstile's
scheduling-pass figures from its metrics, and the machine.

Usage: ``.venv/bin/python -m bench.e2e [--jobs 1000 --runtime 1.0 --timeout 600 --profile out.prof]``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from bench.machine import describe
from webhook.local.client import ApiError, LocalClient
from webhook.local.cluster import LocalCluster
from webhook.local.nodes import RUN_TIME_ANNOTATION
from webhook.local.turnstile import LocalTurnstile

JSON = dict[str, Any]
NAMESPACE = "bench"
COHORTS, QUEUES_PER_COHORT = 5, 6
NOMINAL, BORROWING_LIMIT = "20", "100"
# (share of jobs, class, CPU per job)
MIX = ((0.7, "small", "1"), (0.2, "medium", "5"), (0.1, "large", "20"))
SEED = 1
NODES, NODE_CPU = 10, "100"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds (fields 14 and 15 of /proc/<pid>/stat)."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine() -> str:
    return describe()


def queue_objects() -> list[JSON]:
    objects: list[JSON] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    ]
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            name = f"cq-{c}-{q}"
            quota = {"name": "cpu", "nominalQuota": NOMINAL, "borrowingLimit": BORROWING_LIMIT}
            objects.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "ClusterQueue",
                    "metadata": {"name": name},
                    "spec": {
                        "cohortName": f"cohort-{c}",
                        "namespaceSelector": {},
                        "resourceGroups": [
                            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [quota]}]}
                        ],
                    },
                }
            )
            objects.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": f"lq-{c}-{q}", "namespace": NAMESPACE},
                    "spec": {"clusterQueue": name},
                }
            )
    return objects


def node_profile() -> JSON:
    capacity = {"cpu": NODE_CPU, "memory": "1Ti", "pods": "250"}
    return {"nodes": [{"name": "bench", "count": NODES, "capacity": capacity}]}


def jobs(count: int, runtime: float) -> list[JSON]:
    queues = [f"lq-{c}-{q}" for c in range(COHORTS) for q in range(QUEUES_PER_COHORT)]
    sizes = [(cls, cpu) for share, cls, cpu in MIX for _ in range(round(share * count))][:count]
    sizes += [("small", "1")] * (count - len(sizes))
    random.Random(SEED).shuffle(sizes)
    out = []
    for i, (cls, cpu) in enumerate(sizes):
        out.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"{cls}-{i:04d}",
                    "namespace": NAMESPACE,
                    "labels": {"kueue.x-k8s.io/queue-name": queues[i % len(queues)]},
                },
                "spec": {
                    "parallelism": 1,
                    "completions": 1,
                    "template": {
                        "metadata": {"annotations": {RUN_TIME_ANNOTATION: f"{runtime}s"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                            ],
                        },
                    },
                },
            }
        )
    return out


def create_all(client: LocalClient, bodies: list[JSON]) -> float:
    path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"

    def one(body: JSON) -> None:
        for _ in range(20):
            try:
                client.create(path, body)
                return
            except ApiError as exc:
                if exc.status == 409:
                    return
                time.sleep(0.2)
        raise RuntimeError(f"could not create {body['metadata']['name']}")

    started = time.monotonic()
    with ThreadPoolExecutor(8, thread_name_prefix="creator") as pool:
        list(pool.map(one, bodies))
    return time.monotonic() - started


def progress(client: LocalClient) -> tuple[int, int, int]:
    """(Workloads, ever admitted (admission set or Finished), finished) as the API server sees them."""
    items = client.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/workloads")["items"]
    admitted = finished = 0
    for wl in items:
        status = wl.get("status") or {}
        done = any(c.get("type") == "Finished" and c.get("status") == "True" for c in status.get("conditions") or [])
        finished += done
        admitted += bool(status.get("admission")) or done
    return len(items), admitted, finished


def metric_sum(text: str, name: str) -> float:
    return sum(float(v) for v in re.findall(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+-]+)$", text, re.MULTILINE))


def run(args: argparse.Namespace) -> int:
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix="turnstile-bench-", dir=base) as tmp:
        profile = Path(tmp) / "nodes.yaml"
        profile.write_text(yaml.safe_dump(node_profile()))
        cluster = LocalCluster(Path(tmp) / "cluster", nodes=profile)
        # Turnstile's default lease timings, not LocalTurnstile's quick ones (6 s/4 s, for failover tests): on a
        # loaded 2-core machine a renewal slower than 4 s stopped the process in the middle of the run.
        lease = {"leaderElection": {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"}}
        turnstile = LocalTurnstile(cluster, Path(tmp) / "turnstile", config=lease, python_args=_profile_args(args))
        try:
            print("starting the control plane and Turnstile...", file=sys.stderr)
            cluster.start()
            turnstile.start()
            client = LocalClient(cluster)
            client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            for obj in queue_objects():
                group = "apis/kueue.x-k8s.io/v1beta2"
                plural = obj["kind"].lower() + "s"
                ns = f"/namespaces/{NAMESPACE}" if obj["kind"] == "LocalQueue" else ""
                client.create(f"/{group}{ns}/{plural}", obj)
            bodies = jobs(args.jobs, args.runtime)
            time.sleep(2.0)  # let Turnstile's cache see the queues before the clock starts

            assert cluster.state is not None
            assert turnstile.process is not None
            pids = dict(cluster.state.pids) | {"turnstile": turnstile.process.pid, "driver": os.getpid()}
            cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            metrics_before = turnstile.metrics()

            started = time.monotonic()
            create_seconds = create_all(client, bodies)
            deadline = started + args.timeout
            admitted_at = None
            while time.monotonic() < deadline:
                total, admitted, finished = progress(client)
                if admitted_at is None and total == args.jobs and admitted == args.jobs:
                    admitted_at = time.monotonic()
                    cpu_admitted = {name: cpu_seconds(pid) for name, pid in pids.items()}
                    metrics_admitted = turnstile.metrics()
                if finished == args.jobs:
                    break
                time.sleep(0.5)
            ended = time.monotonic()
            if admitted_at is None:
                print(f"TIMEOUT after {args.timeout:.0f}s: {admitted} of {args.jobs} admitted", file=sys.stderr)
                return 1

            wall = admitted_at - started
            print(f"machine: {machine()}")
            print(
                f"jobs: {args.jobs} ({', '.join(f'{int(s * 100)}% {c} {cpu} CPU' for s, c, cpu in MIX)}), "
                f"{COHORTS * QUEUES_PER_COHORT} ClusterQueues in {COHORTS} cohorts, nominal {NOMINAL} CPU, "
                f"borrowingLimit {BORROWING_LIMIT}, runtime {args.runtime:.1f}s, API creates with 8 threads; "
                f"{NODES} simulated nodes of {NODE_CPU} CPU (kube-scheduler + kwok)"
            )
            print(f"created all in {create_seconds:.1f}s ({args.jobs / create_seconds:.0f}/s through the webhooks)")
            print(f"all admitted after {wall:.1f}s: {args.jobs / wall:.1f} admissions/s")
            print(f"all finished after {ended - started:.1f}s" if finished == args.jobs else "not all finished in time")
            print(f"CPU seconds from first create to all admitted ({wall:.1f}s wall):")
            for name in pids:
                used = cpu_admitted[name] - cpu_before[name]
                print(f"  {name:24s} {used:7.1f} s  ({used / wall:.2f} cores)")
            passes = metric_sum(metrics_admitted, "kueue_admission_attempt_duration_seconds_count") - metric_sum(
                metrics_before, "kueue_admission_attempt_duration_seconds_count"
            )
            seconds = metric_sum(metrics_admitted, "kueue_admission_attempt_duration_seconds_sum") - metric_sum(
                metrics_before, "kueue_admission_attempt_duration_seconds_sum"
            )
            if passes:
                print(f"Turnstile: {passes:.0f} passes, snapshot + schedule {seconds / passes * 1000:.1f} ms each")
            return 0
        finally:
            if turnstile.process is not None and turnstile.process.poll() is not None:
                print(f"Turnstile exited with {turnstile.process.returncode}; the end of its log:", file=sys.stderr)
                print(turnstile.log_file.read_text()[-4000:], file=sys.stderr)
            turnstile.stop()
            cluster.stop()


def _profile_args(args: argparse.Namespace) -> tuple[str, ...]:
    return ("-m", "cProfile", "-o", str(Path(args.profile).resolve())) if args.profile else ()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--runtime", type=float, default=1.0, help="seconds a job's pod runs once it is Running")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    parser.add_argument("--profile", default="", help="run Turnstile under cProfile, writing this file")
    sys.exit(run(parser.parse_args()))


if __name__ == "__main__":
    main()
