"""One deep ClusterQueue drained: how fast the controller admits a backlog, against how fast the API server takes
the same writes.

The backlog: ``--workloads`` (10,000) pending small Workloads (1 CPU each, as the baseline's small class) in one
LocalQueue of one ClusterQueue whose quota holds them all, created while no controller runs. Then the controller
starts (``turnstile run``, or Kueue's ``minimalkueue`` with ``--against kueue``; each on a fresh control plane)
and a watch notes when each Workload is first seen ``Admitted``. Reported: the drain rate (admissions/s from the
controller's start to the last admission, and between the first and the last admission), the controller's
CPU, and quota violations (more CPU held than the ClusterQueue's quota, checked at every event).

The ceiling: on the same API server, with the controller stopped, the driver writes the same admissions itself (the
status a controller writes: the admission and the QuotaReserved and Admitted conditions) to a second backlog of the
same size (created once the controller has stopped), one PUT per Workload from ``--concurrency`` concurrent writers.
The drain rate over that rate is the fraction of the API server's ceiling the controller reaches.

Usage: ``.venv/bin/python -m bench.drain [--workloads 10000] [--against kueue]`` (``make bench-drain``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.baseline import (
    GROUP,
    Run,
    _cond,
    _now,
    bare_cluster,
    kueue_dir,
    same_niceness,
    scratch,
    start_controller,
    tree_cpu,
    tree_pss,
    tree_rss,
)
from bench.e2e import cpu_seconds, machine
from webhook.local.turnstile import LocalTurnstile

JSON = dict[str, Any]
QUEUE = "deep"
FLAVOR = "rf"


def objects(workloads: int) -> list[tuple[str, JSON]]:
    v = "kueue.x-k8s.io/v1beta2"
    quota = {"name": "cpu", "nominalQuota": str(workloads)}
    spec = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [quota]}]}],
    }
    return [
        (f"{GROUP}/resourceflavors", {"apiVersion": v, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}),
        (
            f"{GROUP}/clusterqueues",
            {"apiVersion": v, "kind": "ClusterQueue", "metadata": {"name": QUEUE}, "spec": spec},
        ),
        ("/api/v1/namespaces", {"metadata": {"name": QUEUE}}),
        ("/api/v1/namespaces", {"metadata": {"name": "ceiling"}}),
        (
            f"{GROUP}/namespaces/{QUEUE}/localqueues",
            {
                "apiVersion": v,
                "kind": "LocalQueue",
                "metadata": {"name": QUEUE, "namespace": QUEUE},
                "spec": {"clusterQueue": QUEUE},
            },
        ),
    ]


def workload(name: str, namespace: str, queue: str) -> JSON:
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "queueName": queue,
            "priority": 50,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


def admitted_status(obj: JSON) -> JSON:
    """The status a controller writes when it admits a 1-CPU Workload to the deep queue."""
    now = _now()
    generation = (obj.get("metadata") or {}).get("generation", 1)
    assignment = {"name": "main", "flavors": {"cpu": FLAVOR}, "resourceUsage": {"cpu": "1"}, "count": 1}
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
            "observedGeneration": generation,
        }
        for kind, reason, message in (
            ("QuotaReserved", "QuotaReserved", f"Quota reserved in ClusterQueue {QUEUE}"),
            ("Admitted", "Admitted", "The workload is admitted"),
        )
    ]
    return {"admission": {"clusterQueue": QUEUE, "podSetAssignments": [assignment]}, "conditions": conditions}


@dataclasses.dataclass
class Result:
    system: str
    workloads: int
    drain_from_start: float  # admissions/s, controller start -> last admission
    drain_steady: float  # admissions/s, first -> last admission
    first_admission: float  # seconds after the controller started
    ceiling: float  # the same writes by the driver, per second
    controller_cpu: float
    controller_rss: int
    controller_pss: int
    apiserver_cpu: float
    violations: int
    admitted: int


class Drain:
    def __init__(self, run: Run, workloads: int) -> None:
        self.run = run  # its HTTP client and TLS context
        self.workloads = workloads
        self.admitted_at: dict[str, float] = {}
        self.held: set[str] = set()
        self.violations = 0
        self.done = asyncio.Event()

    async def create(self, session: aiohttp.ClientSession, namespace: str, queue: str, concurrency: int) -> None:
        names = iter(range(self.workloads))

        async def creator() -> None:
            for i in names:
                for _ in range(20):
                    code, answer = await self.run.request(
                        session,
                        "POST",
                        f"{GROUP}/namespaces/{namespace}/workloads",
                        workload(f"w-{i}", namespace, queue),
                    )
                    if code in (201, 409):
                        break
                    await asyncio.sleep(0.2)
                else:
                    raise RuntimeError(f"creating w-{i}: HTTP {code}: {str(answer)[:300]}")

        await asyncio.gather(*(creator() for _ in range(concurrency)))

    async def prepare(self, *, quota: int, concurrency: int) -> None:
        """The queue objects (``quota`` CPU in the ClusterQueue), then the backlog, while no controller runs."""
        run = self.run
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:
            for path, body in objects(quota):
                code, answer = await run.request(session, "POST", path, body)
                if code not in (201, 409):
                    raise RuntimeError(f"creating {path}: HTTP {code}: {str(answer)[:300]}")
            print(f"{run.system}: creating {self.workloads} Workloads...", file=sys.stderr)
            await self.create(session, QUEUE, QUEUE, concurrency)

    async def watch(self, session: aiohttp.ClientSession, ready: asyncio.Event) -> None:
        self.run.done = self.done  # the Run's follow() stops with the drain
        await self.run.follow(session, f"{GROUP}/namespaces/{QUEUE}/workloads", ready, self.seen, self.seen)

    def seen(self, obj: JSON) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        if (obj.get("status") or {}).get("admission"):
            self.held.add(name)
            if len(self.held) > self.workloads:  # the queue's quota is one CPU per Workload of the backlog
                self.violations += 1
        else:
            self.held.discard(name)
        if _cond(obj, "Admitted") and name not in self.admitted_at:
            self.admitted_at[name] = time.monotonic()
            if len(self.admitted_at) == self.workloads:
                self.done.set()

    async def ceiling(self, session: aiohttp.ClientSession, concurrency: int) -> float:
        """The driver admits the second backlog itself: the API server's rate for the same writes."""
        _, listed = await self.run.request(session, "GET", f"{GROUP}/namespaces/ceiling/workloads")
        todo = iter(listed.get("items", []))

        async def writer() -> None:
            for obj in todo:
                name = obj["metadata"]["name"]
                body = obj | {"status": admitted_status(obj)}
                code, answer = await self.run.request(
                    session, "PUT", f"{GROUP}/namespaces/ceiling/workloads/{name}/status", body
                )
                if code != 200:
                    raise RuntimeError(f"ceiling write {name}: HTTP {code}: {str(answer)[:300]}")

        started = time.monotonic()
        await asyncio.gather(*(writer() for _ in range(concurrency)))
        return len(listed.get("items", [])) / (time.monotonic() - started)


def run_once(system: str, *, workloads: int, concurrency: int, timeout: float, kueue: Path | None) -> Result:
    with tempfile.TemporaryDirectory(prefix=f"turnstile-drain-{system}-", dir=scratch()) as tmp:
        cluster = bare_cluster(system, Path(tmp), kueue)
        proc: subprocess.Popen[bytes] | None = None
        turnstile: LocalTurnstile | None = None
        try:
            print(f"{system}: starting a fresh control plane...", file=sys.stderr)
            state = cluster.start()
            apiserver = state.pids["kube-apiserver"]
            run = Run(cluster.server, cluster.pki_dir, scale=1.0, system=system)
            drain = Drain(run, workloads)

            asyncio.run(drain.prepare(quota=workloads, concurrency=concurrency))
            started = time.monotonic()
            pid, proc, turnstile = start_controller(system, cluster, Path(tmp), kueue=kueue)
            cpu0, api0 = tree_cpu(pid), cpu_seconds(apiserver)
            peak = peak_pss = 0

            async def follow() -> None:
                nonlocal peak, peak_pss
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:
                    listed = asyncio.Event()
                    watcher = asyncio.ensure_future(drain.watch(session, listed))
                    try:
                        async with asyncio.timeout(timeout):
                            while not drain.done.is_set():
                                same_niceness(pid)
                                peak = max(peak, tree_rss(pid))
                                peak_pss = max(peak_pss, tree_pss(pid))
                                with contextlib.suppress(TimeoutError):
                                    await asyncio.wait_for(drain.done.wait(), 0.5)
                    except TimeoutError:
                        print(f"{system}: TIMEOUT, {len(drain.admitted_at)} of {workloads} admitted", file=sys.stderr)
                    finally:
                        watcher.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await watcher

            asyncio.run(follow())
            cpu1, api1 = tree_cpu(pid), cpu_seconds(apiserver)
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=15)
                proc = None
            if turnstile is not None:
                turnstile.stop()
                turnstile = None

            async def measure_ceiling() -> float:  # the controller is gone: nobody else writes these
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:
                    await drain.create(session, "ceiling", "no-such-queue", concurrency)
                    return await drain.ceiling(session, concurrency)

            ceiling = asyncio.run(measure_ceiling())
        finally:
            if proc is not None:
                proc.kill()
            if turnstile is not None:
                turnstile.stop()
            cluster.stop()
    times = sorted(drain.admitted_at.values())
    last = times[-1] if times else started
    return Result(
        system=system,
        workloads=workloads,
        drain_from_start=len(times) / (last - started) if times else 0.0,
        drain_steady=(len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0,
        first_admission=(times[0] - started) if times else float("nan"),
        ceiling=ceiling,
        controller_cpu=cpu1 - cpu0,
        controller_rss=peak,
        controller_pss=peak_pss,
        apiserver_cpu=api1 - api0,
        violations=drain.violations,
        admitted=len(times),
    )


def rows(r: Result) -> list[tuple[str, float]]:
    return [
        ("admitted", float(r.admitted)),
        ("first admission after the controller's start (s)", r.first_admission),
        ("drain: admissions/s from the controller's start", r.drain_from_start),
        ("drain: admissions/s, first to last admission", r.drain_steady),
        ("ceiling: the same writes by the driver, per s", r.ceiling),
        ("drain from start / ceiling", r.drain_from_start / r.ceiling if r.ceiling else 0.0),
        ("controller CPU (s)", r.controller_cpu),
        ("controller CPU per 1000 admitted (s)", r.controller_cpu / max(1, r.admitted) * 1000),
        ("controller peak RSS (MiB)", r.controller_rss / 2**20),
        ("controller peak PSS (MiB)", r.controller_pss / 2**20),
        ("kube-apiserver CPU during the drain (s)", r.apiserver_cpu),
        ("quota violations", float(r.violations)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=10_000, help="pending Workloads in the one ClusterQueue")
    parser.add_argument("--against", choices=("kueue",), default=None, help="run Kueue's minimalkueue too")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each system, alternating")
    parser.add_argument("--concurrency", type=int, default=16, help="the driver's concurrent writers")
    parser.add_argument("--timeout", type=float, default=900.0, help="give up a drain after this many seconds")
    args = parser.parse_args()
    systems = ["turnstile", *(["kueue"] if args.against else [])]
    kueue = kueue_dir() if "kueue" in systems else None
    print(f"machine: {machine()}")
    results: list[Result] = []
    for round_ in range(args.rounds):
        for system in systems if round_ % 2 == 0 else list(reversed(systems)):
            result = run_once(
                system, workloads=args.workloads, concurrency=args.concurrency, timeout=args.timeout, kueue=kueue
            )
            results.append(result)
            print(f"-- {system}, round {round_ + 1}", flush=True)
            for key, value in rows(result):
                print(f"   {key:52s}{value:12.2f}", flush=True)
    table = {
        s: {k: statistics.median(dict(rows(r))[k] for r in results if r.system == s) for k, _ in rows(results[0])}
        for s in systems
    }
    print(f"{'median':52s}" + "".join(f"{s:>12s}" for s in systems) + ("       ratio" if len(systems) == 2 else ""))
    for key in table[systems[0]]:
        line = f"{key:52s}" + "".join(f"{table[s][key]:12.2f}" for s in systems)
        if len(systems) == 2:
            b = table["kueue"][key]
            line += f"{table['turnstile'][key] / b:12.2f}" if b else f"{'-':>12s}"
        print(line)
    if any(r.violations or r.admitted < r.workloads for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
