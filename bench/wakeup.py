"""How late a thread that sleeps and wakes (as the serving loop does for each request) gets a CPU beside a busy
process, with the kernel's default time slice and with the serving thread's (``webhook.schedslice``).

A busy loop in a session (scheduling group) of its own, at nice 0 (a neighbour of equal weight) or at ``--hog-nice``
(-10: as the soak runs the control plane), and a probe process at nice 0 in another, both on one CPU. The probe
sleeps 2 ms, does a few microseconds of work, and notes how much later than asked it woke; rounds alternate between
the default slice and the serving slice. Prints each round's p50 / p99 / max and the machine. Linux only; the slice
needs 6.12.

A waking thread preempts only if its virtual deadline (one slice away, divided by its group's weight) comes before
the running one's. Against a group of nine times the weight (nice -10, whose virtual slice is 0.15 ms) even the
shortest slice, 0.1 ms, wins only part of the time.

Usage: ``.venv/bin/python -m bench.wakeup [--rounds 3 --seconds 4 --cpu 1 --hog-nice 0]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from bench.admission import percentile
from bench.machine import describe
from webhook import schedslice

SLEEP_SECONDS = 0.002


def probe(seconds: float, cpu: int, slice_seconds: float) -> list[float]:
    """In this (fresh) process: the lateness of each wake-up over ``seconds``."""
    os.setsid()
    os.sched_setaffinity(0, {cpu})
    if slice_seconds and not schedslice.request_short_slice(slice_seconds):
        raise SystemExit("the kernel did not take the slice")
    late = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.monotonic()
        time.sleep(SLEEP_SECONDS)
        late.append(time.monotonic() - started - SLEEP_SECONDS)
        sum(range(2000))  # a little work, as a small review is
    return late


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    parser.add_argument("--hog-nice", type=int, default=0, help="niceness of the busy process (and its group)")
    parser.add_argument("--probe", type=float, help=argparse.SUPPRESS)  # internal: run one probe with this slice
    args = parser.parse_args()
    if args.probe is not None:
        print(" ".join(f"{x:.7f}" for x in probe(args.seconds, args.cpu, args.probe)))
        return
    hog = subprocess.Popen(
        ["sh", "-c", f'echo {args.hog_nice} > /proc/self/autogroup 2>/dev/null; exec nice -n {args.hog_nice} "$0" -c '
         f'"import os; os.sched_setaffinity(0, {{{args.cpu}}})\nwhile True: pass"', sys.executable],
        start_new_session=True,
    )  # fmt: skip
    print(f"machine: {describe()}")
    print(
        f"a busy process at nice {args.hog_nice} (own session) and the probe at nice 0 (own session) on CPU {args.cpu}"
    )
    try:
        time.sleep(0.5)
        for round_ in range(args.rounds):
            for name, slice_seconds in (("default slice", 0.0), ("serving slice", schedslice.SERVING_SLICE_SECONDS)):
                out = subprocess.run(
                    [sys.executable, "-m", "bench.wakeup", f"--seconds={args.seconds}", f"--cpu={args.cpu}",
                     f"--probe={slice_seconds}"],
                    capture_output=True, text=True, check=True,
                ).stdout  # fmt: skip
                late = [float(x) for x in out.split()]
                print(
                    f"round {round_ + 1}, {name}: {len(late)} wake-ups late by p50 "
                    f"{percentile(late, 0.5) * 1000:.2f} / p99 {percentile(late, 0.99) * 1000:.2f} / max "
                    f"{max(late) * 1000:.2f} ms"
                )
    finally:
        hog.kill()
        hog.wait()


if __name__ == "__main__":
    main()
