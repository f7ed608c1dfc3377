"""WorkQueue: which keys a pass takes, and a failed key's rate-limited retry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from webhook.controller.workqueue import WorkQueue

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def test_the_first_take_is_everything_then_only_what_was_marked() -> None:
    queue: WorkQueue[str] = WorkQueue()
    assert queue.take(NOW) == (True, set())
    queue.add("a")
    assert queue.take(NOW) == (False, {"a"})
    assert queue.take(NOW) == (False, set()), "taken keys are forgotten"
    queue.add_all()
    assert queue.take(NOW)[0] is True


def test_a_failing_key_comes_back_after_a_doubling_backoff_not_at_every_take() -> None:
    queue: WorkQueue[str] = WorkQueue(initial=0.1, cap=0.3)
    queue.take(NOW)
    assert queue.failed("a", NOW) == pytest.approx(0.1)
    assert queue.next_retry() == NOW + timedelta(seconds=0.1)
    assert queue.take(NOW + timedelta(seconds=0.05)) == (False, set()), "not before its backoff"
    assert queue.take(NOW + timedelta(seconds=0.1)) == (False, {"a"})
    assert queue.failed("a", NOW) == pytest.approx(0.2), "a second failure in a row waits twice as long"
    assert queue.failed("a", NOW) == pytest.approx(0.3), "capped"
    queue.succeeded(["a"])
    assert queue.failed("a", NOW) == pytest.approx(0.1), "a success starts the backoff again"


def test_a_failed_key_that_changes_again_is_taken_at_once() -> None:
    queue: WorkQueue[str] = WorkQueue(initial=1.0)
    queue.take(NOW)
    queue.failed("a", NOW)
    queue.add("a")  # its object changed since: that may be what it needed
    assert queue.take(NOW) == (False, {"a"})
    assert queue.next_retry() is None, "taken: its retry is not due a second time"
    assert queue.failures("a") == 1, "the failure still counts until a success"


def test_a_forgotten_key_is_neither_retried_nor_counted() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.take(NOW)
    queue.failed("a", NOW)
    queue.forget("a")
    assert queue.next_retry() is None
    assert queue.failures("a") == 0
    assert queue.take(NOW + timedelta(seconds=60)) == (False, set())
