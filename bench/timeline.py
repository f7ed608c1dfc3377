"""What a baseline run's timeline says about its classes: hold times, reaction to a finish, admissions per window.

Reads the ``<system>-timeline.txt`` files ``bench.baseline --logs DIR`` writes (one line per event the driver saw:
seconds, ``pending``/``admitted``/``finished``, ``cq-<cohort>-<n>/<class>-<i>-<j>``) and prints, per file:
- each class's hold: from the admission the driver saw to the finish it saw (the run time plus the round trips);
- the reaction: from a finish to the next admission in the same cohort (mean, p50, p90);
- admissions per 20 s window by class, how many Workloads were admitted more than once (preempted), and how many
  admissions ended without a finish;
- with the ``<system>-cpu.txt`` beside it, the cores the controller, kube-apiserver, etcd and the driver used in
  each window;
- per class, what its mean time to admission cannot go below while the classes of higher priority still arrive:
  how many of its Workloads were admitted for good (the admission they finished under) before the last finish of
  those classes, and the mean of (the higher classes' last arrival plus their run time, minus the Workload's
  arrival), plus half the time the class's own work takes on the whole quota once they are gone. The baseline's
  large Workloads (priority 200) arrive in step in every queue of a cohort and take its whole quota at each step,
  so what a lower class is admitted into between steps is preempted at the next; when the first count is about
  zero for both systems, no scheduler with Kueue's priorities and preemption does better than that floor.

Usage: ``.venv/bin/python -m bench.timeline DIR/turnstile-timeline.txt DIR/kueue-timeline.txt``. Printed only.
"""

from __future__ import annotations

import argparse
import collections
import statistics
from pathlib import Path

from bench.baseline import CLASSES as SPECS
from bench.baseline import COHORTS, NOMINAL, QUEUES_PER_COHORT

CLASSES = ("small", "medium", "large")
WINDOW = 20.0


def _class(key: str) -> str:
    return key.split("/")[1].split("-")[0]


def _cohort(key: str) -> str:
    return key.split("/")[0].rsplit("-", 1)[0]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(path: Path) -> None:
    events = []
    for line in path.read_text().splitlines():
        at, kind, key = line.split()
        events.append((float(at), kind, key))
    admitted: dict[str, float] = {}
    arrived: dict[str, float] = {}
    holds: dict[str, list[float]] = collections.defaultdict(list)
    admissions: collections.Counter[str] = collections.Counter()
    windows: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for at, kind, key in events:
        if kind == "pending":
            arrived.setdefault(key, at)
        if kind == "admitted":
            admitted[key] = at  # the last admission: the one the Workload finished under
            admissions[key] += 1
            windows[int(at // WINDOW)][_class(key)] += 1
        elif kind == "finished" and key in admitted:
            holds[_class(key)].append(at - admitted[key])
    reactions: list[float] = []
    finished_since: dict[str, list[float]] = collections.defaultdict(list)
    for at, kind, key in events:
        cohort = _cohort(key)
        if kind == "finished":
            finished_since[cohort].append(at)
        elif kind == "admitted" and finished_since[cohort]:
            reactions += [at - t for t in finished_since.pop(cohort)]
    print(path)
    for cls in CLASSES:
        h = holds[cls]
        if h:
            mean, p50, p90 = statistics.mean(h), _quantile(h, 0.5), _quantile(h, 0.9)
            print(f"  hold {cls:6s}: mean {mean:.3f} s, p50 {p50:.3f}, p90 {p90:.3f}")
    if reactions:
        mean, p50, p90 = statistics.mean(reactions), _quantile(reactions, 0.5), _quantile(reactions, 0.9)
        print(f"  finish -> next admission in its cohort: mean {mean:.3f} s, p50 {p50:.3f}, p90 {p90:.3f}")
    for index in sorted(windows):
        counts = ", ".join(f"{cls} {windows[index][cls]}" for cls in CLASSES if windows[index][cls])
        print(f"  admitted in {index * WINDOW:5.0f}-{(index + 1) * WINDOW:.0f} s: {counts}")
    again = collections.Counter(_class(k) for k, n in admissions.items() if n > 1)
    print("  admitted more than once (preempted): " + (", ".join(f"{c} {again[c]}" for c in CLASSES) or "none"))
    # Admissions that ended without a finish (preempted, evicted): the churn a fast scheduler can meet when
    # lower-priority work fills every gap the higher-priority work leaves, only to be reclaimed.
    lost = collections.Counter(_class(k) for k, n in admissions.items() for _ in range(n - 1))
    print("  admissions that ended before a finish: " + ", ".join(f"{c} {lost[c]}" for c in CLASSES))
    finished_at = {key: at for at, kind, key in events if kind == "finished"}
    _floors(arrived, admitted, finished_at)
    cpu = path.with_name(path.name.replace("-timeline.txt", "-cpu.txt"))
    if cpu.exists():
        _cores(cpu)


def _cores(path: Path) -> None:
    """Cores each process used per window, from the CPU seconds ``bench.baseline --logs`` samples once a second."""
    samples = [[float(field) for field in line.split()] for line in path.read_text().splitlines() if line.strip()]
    print("  cores used by the controller / kube-apiserver / etcd / driver (the four together):")
    start = 0
    while start < len(samples) - 1:
        window = int(samples[start][0] // WINDOW)
        end = start
        while end + 1 < len(samples) and int(samples[end + 1][0] // WINDOW) == window:
            end += 1
        end = min(end + 1, len(samples) - 1)  # up to the first sample of the next window
        span = samples[end][0] - samples[start][0]
        if span > 0:
            used = [(samples[end][i] - samples[start][i]) / span for i in range(1, 5)]
            cores = " / ".join(f"{u:.2f}" for u in used)
            print(f"    {samples[start][0]:5.0f}-{samples[end][0]:.0f} s: {cores} ({sum(used):.2f})")
        start = end


def _floors(arrived: dict[str, float], admitted: dict[str, float], finished_at: dict[str, float]) -> None:
    """Per class below the highest: the floor of its mean time to admission set by the classes above it."""
    capacity = COHORTS * QUEUES_PER_COHORT * NOMINAL  # CPU, every queue's nominal quota
    by_priority = sorted(SPECS, key=lambda c: -c.priority)
    for index, spec in enumerate(by_priority[1:], start=1):
        higher = {c.name for c in by_priority[:index]}
        above = [k for k in arrived if _class(k) in higher]
        mine = [k for k in arrived if _class(k) == spec.name]
        if not above or not mine:
            continue
        last_finish = max(finished_at.get(k, 0.0) for k in above)
        gone = max(arrived[k] + next(c for c in SPECS if c.name == _class(k)).runtime_ms / 1000 for k in above)
        early = sum(1 for k in mine if k in admitted and admitted[k] < last_finish)
        waiting = statistics.mean(max(0.0, gone - arrived[k]) for k in mine)
        drain = len(mine) * spec.cpu * spec.runtime_ms / 1000 / capacity
        print(
            f"  floor {spec.name:6s}: {early} of {len(mine)} admitted for good before the last finish of "
            f"{'/'.join(sorted(higher))} ({last_finish:.1f} s); mean wait for them to be gone "
            f"{waiting:.1f} s + half its own drain {drain / 2:.1f} s = {waiting + drain / 2:.1f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("timelines", nargs="+", type=Path, help="timeline files written by bench.baseline --logs")
    for path in parser.parse_args().timelines:
        report(path)


if __name__ == "__main__":
    main()
