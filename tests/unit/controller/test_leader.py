"""Leader election: one holder at a time, takeover only after a full lease duration, loss detected."""

from __future__ import annotations

import asyncio

import pytest

from tests.doubles.fakekube import FakeKube
from webhook.controller.leader import LeaderElector, Lease, LeaseConfig, LostLeadership
from webhook.kube.resources import LEASE

CONFIG = LeaseConfig(namespace="turnstile-system", lease_duration=15, renew_deadline=10, retry_period=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(kube: FakeKube, identity: str, clock: Clock, config: LeaseConfig = CONFIG) -> LeaderElector:
    return LeaderElector(kube, config, identity=identity, monotonic=clock)


async def test_first_candidate_creates_the_lease_and_leads() -> None:
    kube, clock = FakeKube(), Clock()
    a = elector(kube, "a", clock)
    assert await a.try_acquire_or_renew()
    lease = await kube.get(LEASE, "turnstile-leader", namespace="turnstile-system")
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseTransitions"] == 0


async def test_second_candidate_waits_a_full_lease_duration_after_the_last_change() -> None:
    kube, clock = FakeKube(), Clock()
    a, b = elector(kube, "a", clock), elector(kube, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.now += 10
    assert await a.try_acquire_or_renew(), "the holder renews"
    clock.now += 10
    assert not await b.try_acquire_or_renew(), "the renewal restarted b's wait"
    clock.now += 15.1
    assert await b.try_acquire_or_renew(), "a stopped renewing: b takes over"
    lease = await kube.get(LEASE, "turnstile-leader", namespace="turnstile-system")
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not await a.try_acquire_or_renew(), "the old holder must not take it back"
    assert not a.is_leader


async def test_released_lease_is_taken_at_once() -> None:
    kube, clock = FakeKube(), Clock()
    a, b = elector(kube, "a", clock), elector(kube, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    await a.release()
    assert await b.try_acquire_or_renew()


async def test_concurrent_candidates_never_both_win() -> None:
    kube, clock = FakeKube(), Clock()
    candidates = [elector(kube, f"c{i}", clock) for i in range(5)]
    won = await asyncio.gather(*(c.try_acquire_or_renew() for c in candidates))
    assert sum(won) == 1


async def test_hold_raises_when_renewal_keeps_failing() -> None:
    kube = FakeKube()
    fast = LeaseConfig(namespace="ns", lease_duration=0.3, renew_deadline=0.2, retry_period=0.05)
    a = LeaderElector(kube, fast, identity="a")
    await a.acquire()
    kube.faults.fail_next(("get", "patch", "replace"), resource=LEASE, times=1000)
    with pytest.raises(LostLeadership):
        await asyncio.wait_for(a.hold(), timeout=5)
    assert not a.is_leader


def test_config_rejects_inconsistent_timings() -> None:
    with pytest.raises(ValueError, match="retryPeriod < renewDeadline < leaseDuration"):
        LeaseConfig(namespace="ns", lease_duration=10, renew_deadline=10, retry_period=2)


async def test_a_lease_without_a_spec_is_taken_at_once_as_a_free_one() -> None:
    kube, clock = FakeKube(), Clock()
    await kube.create(LEASE, {"metadata": {"name": "turnstile-leader", "namespace": "turnstile-system"}})
    assert await elector(kube, "b", clock).try_acquire_or_renew()
    lease = await kube.get(LEASE, "turnstile-leader", namespace="turnstile-system")
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 0)


@pytest.mark.parametrize(
    ("spec", "holder", "duration"),
    [
        pytest.param(None, "", 15.0, id="no-spec-is-free"),
        pytest.param({"holderIdentity": "a"}, "a", 15.0, id="duration-defaults-to-ours"),
        pytest.param({"holderIdentity": "a", "leaseDurationSeconds": 40}, "a", 40.0, id="duration-as-written"),
    ],
)
def test_the_lease_is_read_with_defaults(spec: dict[str, object] | None, holder: str, duration: float) -> None:
    lease = Lease.of({"metadata": {"name": "l"}, "spec": spec})
    assert (lease.holder, lease.duration_or(CONFIG.lease_duration), lease.transitions) == (holder, duration, 0)
