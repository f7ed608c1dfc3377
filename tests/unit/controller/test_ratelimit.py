"""The token bucket behind the rates of events, pending reasons and queue status, and the latency that scales them."""

from __future__ import annotations

import pytest

from webhook.controller.ratelimit import TokenBucket, WriteLatency


def test_a_burst_then_the_rate() -> None:
    bucket = TokenBucket(2.0, 3)
    assert [bucket.take(10.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.next_at(10.0) == pytest.approx(10.5), "one token every half second"
    assert not bucket.take(10.4)
    assert bucket.take(10.5)
    assert not bucket.take(10.5)


def test_an_idle_bucket_fills_up_to_its_burst_only() -> None:
    bucket = TokenBucket(1.0, 2)
    assert bucket.take(0.0)
    assert bucket.next_at(0.0) == 0.0, "a token is left"
    assert [bucket.take(100.0) for _ in range(3)] == [True, True, False]


def test_time_going_backwards_adds_nothing() -> None:
    bucket = TokenBucket(1.0, 1)
    assert bucket.take(5.0)
    assert not bucket.take(4.0)
    assert not bucket.take(5.5)
    assert bucket.take(6.0)


def test_a_bucket_that_could_never_give_is_refused() -> None:
    with pytest.raises(ValueError, match="positive rate"):
        TokenBucket(0.0, 1)
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(1.0, 0)


def test_a_share_slows_the_refill_and_the_next_token() -> None:
    share = [1.0]
    bucket = TokenBucket(2.0, 1, share=lambda: share[0])
    assert bucket.take(0.0)
    assert bucket.next_at(0.0) == pytest.approx(0.5)
    share[0] = 0.25
    assert bucket.next_at(0.0) == pytest.approx(2.0), "a quarter of the rate: a token every 2 s"
    assert not bucket.take(1.0)
    assert bucket.take(2.0)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_information_keeps_its_whole_rate_while_admissions_are_answered_as_fast_as_lately() -> None:
    latency = WriteLatency(tolerance=2.0, relaxed=0.02, clock=Clock())
    assert latency.share() == 1.0, "nothing measured yet"
    for seconds in (0.3, 0.3, 2.0, 0.3, 0.35):
        latency.observe(seconds)
    assert latency.share() == 1.0, "slow all along (a distant etcd), and one slower answer: not a slowdown"


def test_a_slowdown_leaves_information_a_smaller_share_down_to_the_least() -> None:
    latency = WriteLatency(tolerance=2.0, relaxed=0.02, least=0.2, window=4, clock=Clock())
    for seconds in (0.05, 0.05, 0.05, 0.05):
        latency.observe(seconds)
    for seconds in (0.2, 0.2, 0.2):
        latency.observe(seconds)
    assert latency.share() == pytest.approx(0.5), "four times as slow as lately, twice the tolerance: half the rate"
    for seconds in (1.0, 1.0, 1.0, 1.0):
        latency.observe(seconds)
    assert latency.share() == 0.2, "never below the least share"
    for seconds in (0.05, 0.05, 0.05):
        latency.observe(seconds)
    assert latency.share() == 1.0, "as fast as lately again (the last four's median): the whole rate back"


def test_answers_within_relaxed_are_never_a_slowdown() -> None:
    latency = WriteLatency(tolerance=2.0, relaxed=0.02, window=1, clock=Clock())
    latency.observe(0.001)
    latency.observe(0.015)
    assert latency.share() == 1.0, "15 times slower than lately, but 15 ms"
    latency.observe(0.04)
    assert latency.share() == pytest.approx(0.5)


def test_lately_is_the_last_memory_seconds() -> None:
    clock = Clock()
    latency = WriteLatency(tolerance=2.0, relaxed=0.0, window=2, memory=300.0, clock=clock)
    latency.observe(0.05)
    clock.now += 100.0
    latency.observe(0.2)
    latency.observe(0.2)
    assert latency.share() == pytest.approx(0.5), "0.05 s 100 s ago is lately"
    clock.now += 250.0
    latency.observe(0.2)
    assert latency.share() == 1.0, "350 s later the fast answers are forgotten: this is how fast it is now"


def test_a_slowdown_with_no_admission_since_goes_stale() -> None:
    clock = Clock()
    latency = WriteLatency(tolerance=1.0, relaxed=0.0, least=0.2, window=1, stale=30.0, clock=clock)
    latency.observe(0.1)
    latency.observe(0.5)
    clock.now += 29.0
    assert latency.share() == 0.2
    clock.now += 2.0
    assert latency.share() == 1.0, "nothing admitted for 30 s: nothing to give way to"
    latency.observe(0.2)
    assert latency.share() == pytest.approx(0.5), "lately is still remembered"


def test_write_latency_refuses_a_share_that_could_stop_information() -> None:
    with pytest.raises(ValueError, match="least"):
        WriteLatency(least=0.0)
    with pytest.raises(ValueError, match="tolerance"):
        WriteLatency(tolerance=0.5)


def test_lately_keeps_one_low_a_second_however_many_answers() -> None:
    clock = Clock()
    latency = WriteLatency(window=1, memory=300.0, clock=clock)
    for i in range(10_000):  # answers slower and slower, 100 a second for 100 s
        clock.now += 0.01
        latency.observe(0.001 * (i + 1))
    assert len(latency._lows) <= 101
    assert latency.share() == 0.2, "10 s against 1 ms lately"
