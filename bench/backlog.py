"""Memory of the controller holding a deep backlog: N pending Workloads cached, a few admitted.

The scenario: one ClusterQueue with ``--quota`` CPU (100) and ``--workloads`` (50,000) pending 1-CPU Workloads in
its LocalQueue (``bench.drain``'s objects), created while no controller runs. Then the controller starts
(``turnstile run``, or Kueue's ``minimalkueue`` with ``--against kueue``; each on a fresh control plane), lists
everything, admits what the quota holds and keeps the rest pending. Its process tree is sampled every half second
for ``--seconds`` (90) from its start: RSS (``statm``, summed over the tree: pages shared by Turnstile's
processes counted once per process) and PSS (``smaps_rollup``: shared pages split between the processes that
share them, as a container's memory counts them once). Printed per process and summed: the peak and the last
sample; and how long the controller took to admit the quota's worth.

Usage: ``flock /tmp/turnstile-bench.lock .venv/bin/python -m bench.backlog [--workloads 50000] [--against kueue]``.
Printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench.baseline import Run, bare_cluster, kueue_dir, process_tree, same_niceness, scratch, start_controller
from bench.drain import Drain
from bench.e2e import machine

PAGE = 4096


def rss_pss(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes; (0, 0) once it is gone."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return rss, int(line.split()[1]) * 1024
    return 0, 0


@dataclass
class Memory:
    """Peak and last RSS and PSS per process of the tree, and of the tree summed."""

    peak: dict[int, tuple[int, int]] = field(default_factory=dict)
    last: dict[int, tuple[int, int]] = field(default_factory=dict)
    peak_total: tuple[int, int] = (0, 0)
    last_total: tuple[int, int] = (0, 0)
    labels: dict[int, str] = field(default_factory=dict)

    def sample(self, root: int) -> None:
        now = {p: rss_pss(p) for p in process_tree(root)}
        for p in now:
            if p not in self.labels:
                self.labels[p] = describe(p, root)
        for p, (rss, pss) in now.items():
            old = self.peak.get(p, (0, 0))
            self.peak[p] = (max(old[0], rss), max(old[1], pss))
        self.last = now
        self.last_total = (sum(r for r, _ in now.values()), sum(s for _, s in now.values()))
        self.peak_total = (max(self.peak_total[0], self.last_total[0]), max(self.peak_total[1], self.last_total[1]))


def describe(pid: int, root: int) -> str:
    if pid == root:
        return "the controller's own process"
    with contextlib.suppress(OSError):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if "resource_tracker" in cmdline:
            return "multiprocessing's resource tracker"
        if "turnstile-reconciler" in cmdline:
            return "the reconciler process"
        if "turnstile-review-worker" in cmdline:
            return "a review worker"
        if "spawn_main" in cmdline:
            return "a spawned child (reconciler or review worker)"
        return f"a child: {cmdline[:40]}"
    return "a child"


def run_once(system: str, *, workloads: int, quota: int, seconds: float, concurrency: int, kueue: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix=f"turnstile-backlog-{system}-", dir=scratch()) as tmp:
        cluster = bare_cluster(system, Path(tmp), kueue)
        proc: subprocess.Popen[bytes] | None = None
        try:
            print(f"{system}: starting a fresh control plane...", file=sys.stderr)
            cluster.start()
            run = Run(cluster.server, cluster.pki_dir, scale=1.0, system=system)
            drain = Drain(run, workloads)

            asyncio.run(drain.prepare(quota=quota, concurrency=concurrency))
            started = time.monotonic()
            pid, proc, turnstile = start_controller(system, cluster, Path(tmp), kueue=kueue)
            memory = Memory()
            filled: float | None = None

            async def follow() -> None:
                nonlocal filled
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:
                    listed = asyncio.Event()
                    watcher = asyncio.ensure_future(drain.watch(session, listed))
                    try:
                        while time.monotonic() - started < seconds:
                            same_niceness(pid)
                            memory.sample(pid)
                            if filled is None and len(drain.admitted_at) >= quota:
                                filled = time.monotonic() - started
                            await asyncio.sleep(0.5)
                    finally:
                        watcher.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await watcher

            try:
                asyncio.run(follow())
            finally:
                if turnstile is not None:
                    turnstile.stop()
                if proc is not None:
                    proc.terminate()
                    proc.wait(timeout=15)
                    proc = None
        finally:
            if proc is not None:
                proc.kill()
            cluster.stop()
    mib = 2**20
    print(f"-- {system}: {workloads} Workloads, quota {quota} CPU, sampled {seconds:.0f} s", flush=True)
    admitted = "not within the run" if filled is None else f"{filled:.1f} s after the controller's start"
    print(f"   the quota's {quota} admitted: {admitted}; admitted in all: {len(drain.admitted_at)}")
    print(f"   {'process':48s}{'peak RSS':>10s}{'peak PSS':>10s}{'last RSS':>10s}{'last PSS':>10s}  (MiB)")
    for p in sorted(memory.peak, key=lambda p: -memory.peak[p][0]):
        (prss, ppss), (lrss, lpss) = memory.peak[p], memory.last.get(p, (0, 0))
        label = f"{p}: {memory.labels[p]}{'' if p in memory.last else ' (gone)'}"
        print(f"   {label:48s}{prss / mib:10.1f}{ppss / mib:10.1f}{lrss / mib:10.1f}{lpss / mib:10.1f}")
    (prss, ppss), (lrss, lpss) = memory.peak_total, memory.last_total
    print(f"   {'the tree':48s}{prss / mib:10.1f}{ppss / mib:10.1f}{lrss / mib:10.1f}{lpss / mib:10.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=50_000, help="Workloads in the one ClusterQueue")
    parser.add_argument("--quota", type=int, default=100, help="the ClusterQueue's CPU: how many are admitted")
    parser.add_argument("--seconds", type=float, default=90.0, help="how long the controller is sampled")
    parser.add_argument("--against", choices=("kueue",), default=None, help="run Kueue's minimalkueue too")
    parser.add_argument("--concurrency", type=int, default=16, help="the driver's concurrent writers")
    args = parser.parse_args()
    systems = ["turnstile", *(["kueue"] if args.against else [])]
    kueue = kueue_dir() if "kueue" in systems else None
    print(f"machine: {machine()}")
    for system in systems:
        run_once(
            system,
            workloads=args.workloads,
            quota=args.quota,
            seconds=args.seconds,
            concurrency=args.concurrency,
            kueue=kueue,
        )


if __name__ == "__main__":
    main()
