"""The Lease renewed on a thread of its own: it keeps being renewed while the owner's loop is blocked, loss is
reported to the owner, and stopping gives the Lease up."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator

import pytest

from tests.doubles.fakekube import FakeKube
from webhook.controller.leader import LeaseConfig, LeaseThread, LostLeadership
from webhook.kube.resources import LEASE

pytestmark = pytest.mark.timeout(30)

FAST = LeaseConfig(namespace="ns", name="lead", lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)


def shared(kube: FakeKube) -> contextlib.AbstractAsyncContextManager[FakeKube]:
    @contextlib.asynccontextmanager
    async def use() -> AsyncIterator[FakeKube]:
        yield kube

    return use()


async def _renew_time(kube: FakeKube) -> str:
    return str((await kube.get(LEASE, "lead", namespace="ns"))["spec"]["renewTime"])


async def test_renewal_goes_on_while_the_owner_loop_is_blocked() -> None:
    kube = FakeKube()
    leading = asyncio.Event()
    lost: list[BaseException] = []
    thread = LeaseThread(lambda: shared(kube), FAST, identity="me", on_leading=leading.set, on_lost=lost.append)
    thread.start()
    try:
        await asyncio.wait_for(leading.wait(), 5)
        before = await _renew_time(kube)
        time.sleep(1.5)  # noqa: ASYNC251 - blocking the owner loop (longer than the lease duration) is the point
        after = await _renew_time(kube)
        assert after != before, "the Lease was renewed while the owner's loop was blocked"
        await asyncio.sleep(0.1)
        assert lost == []
    finally:
        await thread.stop()
    lease = await kube.get(LEASE, "lead", namespace="ns")
    assert lease["spec"]["holderIdentity"] == "", "stopping releases the Lease"


async def test_a_lost_lease_is_reported_to_the_owner() -> None:
    kube = FakeKube()
    leading = asyncio.Event()
    lost: list[BaseException] = []
    thread = LeaseThread(lambda: shared(kube), FAST, identity="me", on_leading=leading.set, on_lost=lost.append)
    thread.start()
    try:
        await asyncio.wait_for(leading.wait(), 5)
        kube.faults.fail_next(("get", "patch", "replace"), resource=LEASE, times=1000)
        async with asyncio.timeout(5):
            while not lost:  # noqa: ASYNC110 - the callback appends from the owner's loop
                await asyncio.sleep(0.05)
    finally:
        await thread.stop()
    assert isinstance(lost[0], LostLeadership)


async def test_the_leaders_work_is_stopped_on_the_lease_thread_while_the_owner_loop_is_blocked() -> None:
    """``stop_now`` (the reconciler process kills its child there) must not wait for a busy owner loop: the margin
    between the renew deadline and the lease duration is all there is before another replica may lead."""
    kube = FakeKube()
    leading = asyncio.Event()
    lost: list[BaseException] = []
    stopped = threading.Event()
    thread = LeaseThread(
        lambda: shared(kube), FAST, identity="me", on_leading=leading.set, on_lost=lost.append, stop_now=stopped.set
    )
    thread.start()
    try:
        await asyncio.wait_for(leading.wait(), 5)
        kube.faults.fail_next(("get", "patch", "replace"), resource=LEASE, times=1000)
        blocked_until = time.monotonic() + 3 * FAST.lease_duration
        while not stopped.is_set() and time.monotonic() < blocked_until:
            time.sleep(0.01)  # noqa: ASYNC251 - the owner loop is busy: nothing it schedules runs meanwhile
        assert stopped.is_set(), "the leader's work was not stopped while the owner's loop was blocked"
        assert lost == [], "the owner hears of it only once its loop runs again"
        async with asyncio.timeout(5):
            while not lost:  # noqa: ASYNC110 - the callback appends from the owner's loop
                await asyncio.sleep(0.05)
    finally:
        await thread.stop()
    assert isinstance(lost[0], LostLeadership)
