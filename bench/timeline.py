"""What a baseline run's timeline says about its classes: hold times, reaction to a finish, admissions per window.

Reads the ``<system>-timeline.txt`` files ``bench.baseline --logs DIR`` writes (one line per event the driver saw:
seconds, ``pending``/``admitted``/``finished``, ``cq-<cohort>-<n>/<class>-<i>-<j>``) and prints, per file:
- each class's hold: from the admission the driver saw to the finish it saw (the run time plus the round trips);
- the reaction: from a finish to the next admission in the same cohort (mean, p50, p90);
- admissions per 20 s window by class, how many Workloads were admitted more than once (preempted), and how many
  admissions ended without a finish.

Usage: ``.venv/bin/python -m bench.timeline DIR/turnstile-timeline.txt DIR/kueue-timeline.txt``. Printed only.
"""

from __future__ import annotations

import argparse
import collections
import statistics
from pathlib import Path

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
    holds: dict[str, list[float]] = collections.defaultdict(list)
    admissions: collections.Counter[str] = collections.Counter()
    windows: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for at, kind, key in events:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("timelines", nargs="+", type=Path, help="timeline files written by bench.baseline --logs")
    for path in parser.parse_args().timelines:
        report(path)


if __name__ == "__main__":
    main()
