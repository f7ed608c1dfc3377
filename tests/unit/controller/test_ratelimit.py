"""The token bucket behind the rates of events and pending reasons."""

from __future__ import annotations

import pytest

from webhook.controller.ratelimit import TokenBucket


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
