"""When freed request bodies are given back to the OS: after enough bytes, at most so often, never dropped, and
off the serving loop's thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from webhook import memtrim
from webhook.memtrim import MemoryTrimmer, TrimPolicy

pytestmark = pytest.mark.timeout(10)

MIB = 1024 * 1024


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """The injected trim and sleep: what was trimmed, on which thread, and how long each trim was deferred."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.trim_threads: list[int] = []
        self.delays: list[float] = []

    def trim(self) -> None:
        self.trim_threads.append(threading.get_ident())

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.clock.now += seconds


def policy(clock: Clock) -> TrimPolicy:
    return TrimPolicy(min_seconds=10.0, min_bytes=32 * MIB, clock=clock)


def test_no_trim_is_due_before_enough_bytes_were_read() -> None:
    rules = policy(Clock())
    assert [rules.read(3 * MIB) for _ in range(10)] == [None] * 10
    assert rules.read(2 * MIB) == 0.0


def test_a_trim_within_the_interval_of_the_last_is_deferred_to_its_end() -> None:
    clock = Clock()
    rules = policy(clock)
    assert rules.read(32 * MIB) == 0.0
    rules.trimmed()
    clock.now += 4.0
    assert rules.read(32 * MIB) == pytest.approx(6.0)


def test_one_trim_is_pending_at_a_time_and_the_bytes_count_again_after_it() -> None:
    clock = Clock()
    rules = policy(clock)
    assert rules.read(32 * MIB) == 0.0
    assert rules.read(64 * MIB) is None
    rules.trimmed()
    clock.now += 60.0
    assert rules.read(31 * MIB) is None


async def settled() -> None:
    """Until the trims under way are done."""
    await asyncio.gather(*(task for task in asyncio.all_tasks() if task.get_name() == "malloc-trim"))


async def test_trims_run_in_a_thread_at_most_once_per_interval_and_a_deferred_one_is_kept() -> None:
    clock = Clock()
    recorder = Recorder(clock)
    trimmer = MemoryTrimmer(policy=policy(clock), trim=recorder.trim, sleep=recorder.sleep)
    trimmer.bodies_read(32 * MIB)
    await settled()
    clock.now += 4.0
    for _ in range(20):  # a burst of aborted 3 MiB uploads: one trim, at the end of the interval
        trimmer.bodies_read(3 * MIB)
    await settled()
    for _ in range(10):  # 30 MiB: not enough for another
        trimmer.bodies_read(3 * MIB)
    await settled()
    await trimmer.close()
    assert recorder.delays == [0.0, pytest.approx(6.0)]
    assert trimmer.trims == len(recorder.trim_threads) == 2
    assert threading.get_ident() not in recorder.trim_threads


async def test_closing_cancels_a_deferred_trim() -> None:
    clock = Clock()
    trims: list[None] = []
    trimmer = MemoryTrimmer(policy=policy(clock), trim=lambda: trims.append(None))
    trimmer.policy.last_trim = clock.now
    trimmer.bodies_read(32 * MIB)  # due in 10 s of the real loop's time
    await asyncio.sleep(0)
    await trimmer.close()
    assert trims == []


def test_the_glibc_trim_runs_here_and_returns() -> None:
    memtrim.glibc_trim()()
