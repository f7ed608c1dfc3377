"""Why a review was slow, from the kernel's scheduler trace: was the serving thread running, waiting for a CPU, or
asleep while the review waited, and what ran on the CPUs while it waited.

``perf sched record`` (system-wide, ``CLOCK_MONOTONIC`` timestamps, so they compare with the valid client's
``loop.time()``) during part of the soak; ``perf sched timehist`` turns its switches into one line per time slice:
the task, the CPU, and how long it slept, waited runnable (the scheduling delay) and ran before it was switched out.
From those slices ``explain`` rebuilds, for one thread, when it ran and when it waited for a CPU, and for each CPU
what ran when. Used by ``bench.soak --perf-sched FILE``; needs ``perf`` and the right to trace (root here).
"""

from __future__ import annotations

import bisect
import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# "   23614.463999 [0000]  kube-apiserver[12246/12241]   0.000   0.000   0.064"
_LINE = re.compile(r"^\s*(\d+\.\d+)\s+\[(\d+)\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def record(output: str, seconds: float) -> Any:
    """Starts ``perf sched record`` of the whole machine for ``seconds``; returns the process (wait for it)."""
    return subprocess.Popen(
        ["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-o", output, "--", "sleep", str(seconds)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@dataclass
class Trace:
    """Per thread: (start, end) of its runnable waits and of its runs; per CPU: (start, end, pid, comm) runs."""

    waits: dict[int, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    runs: dict[int, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    cpu_runs: dict[int, list[tuple[float, float, int, str]]] = field(default_factory=lambda: defaultdict(list))
    start: float = 0.0
    end: float = 0.0


def load(path: str, threads: Iterable[int]) -> Trace:
    """Parses ``perf sched timehist``; keeps the waits and runs of ``threads`` and every CPU's runs."""
    wanted = set(threads)
    trace = Trace()
    text = subprocess.run(["perf", "sched", "timehist", "-i", path], capture_output=True, text=True, check=True).stdout
    first = True
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        end = float(match[1])
        cpu = int(match[2])
        comm = match[3]
        tid = int(match[4])
        pid = int(match[5]) if match[5] else tid
        delay = float(match[7]) / 1000
        ran = float(match[8]) / 1000
        if first:
            trace.start, first = end, False
        trace.end = end
        began = end - ran
        if comm.startswith("<idle>") or tid == 0:
            continue
        trace.cpu_runs[cpu].append((began, end, pid, comm))
        if tid in wanted:
            trace.runs[tid].append((began, end))
            if delay > 0:
                trace.waits[tid].append((began - delay, began))
    return trace


def _overlap(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Time within [start, end] covered by sorted, disjoint intervals."""
    total = 0.0
    i = bisect.bisect_left(intervals, (start, start)) - 1
    for a, b in intervals[max(0, i) :]:
        if a >= end:
            break
        total += max(0.0, min(b, end) - max(a, start))
    return total


@dataclass
class Explanation:
    slow: int = 0
    seconds: float = 0.0  # the slow reviews' time, added up
    running: float = 0.0
    waiting: float = 0.0
    waits_over: Counter[str] = field(default_factory=Counter)  # runnable waits of the thread, by length
    longest_wait: float = 0.0
    while_waiting: dict[str, float] = field(
        default_factory=lambda: defaultdict(float)
    )  # CPU seconds of others while the thread waited


def _bucket(seconds: float) -> str:
    for limit in (0.001, 0.005, 0.010, 0.050):
        if seconds <= limit:
            return f"<={limit * 1000:.0f} ms"
    return ">50 ms"


def explain(
    trace: Trace, thread: int, requests: Iterable[tuple[float, float]], names: Mapping[int, str], slow: float = 0.010
) -> Explanation:
    """For each request (sent, latency) slower than ``slow`` inside the traced window: how much of its time the
    thread ran and waited for a CPU; and, over all the thread's waits in the window, their lengths and who ran."""
    out = Explanation()
    runs = sorted(trace.runs.get(thread, []))
    waits = sorted(trace.waits.get(thread, []))
    for sent, latency in requests:
        if latency <= slow or sent < trace.start or sent + latency > trace.end:
            continue
        out.slow += 1
        out.seconds += latency
        out.running += _overlap(runs, sent, sent + latency)
        out.waiting += _overlap(waits, sent, sent + latency)
    for a, b in waits:
        out.waits_over[_bucket(b - a)] += 1
        out.longest_wait = max(out.longest_wait, b - a)
    for cpu_runs in trace.cpu_runs.values():
        cpu_runs.sort()
        for a, b in waits:
            i = max(0, bisect.bisect_left(cpu_runs, (a, a, 0, "")) - 1)
            for start, end, pid, comm in cpu_runs[i:]:
                if start >= b:
                    break
                shared = max(0.0, min(end, b) - max(start, a))
                if shared:
                    out.while_waiting[names.get(pid, comm)] += shared
    return out


def report(out: Explanation, trace: Trace, who: str) -> str:
    window = trace.end - trace.start
    lines = [f"scheduler trace ({window:.0f}s of the soak), {who}:"]
    if out.slow:
        lines.append(
            f"  {out.slow} valid reviews over 10 ms in it ({out.seconds:.2f}s in all): {who} ran "
            f"{out.running / out.seconds:.0%} of that time and waited for a CPU {out.waiting / out.seconds:.0%}"
        )
    waits = sum(out.waits_over.values())
    lines.append(
        f"  {who}'s waits for a CPU: {waits}, longest {out.longest_wait * 1000:.1f} ms; "
        + ", ".join(f"{k} {v}" for k, v in sorted(out.waits_over.items()))
    )
    total = sum(out.while_waiting.values()) or 1.0
    lines.append(
        "  on the CPUs while it waited: "
        + ", ".join(
            f"{name} {s / total:.0%}" for name, s in sorted(out.while_waiting.items(), key=lambda kv: -kv[1])[:8]
        )
    )
    return "\n".join(lines)
