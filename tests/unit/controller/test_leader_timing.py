"""The leader's renewal timing on a virtual clock: retries within the renew deadline, loss at the deadline, and
never two replicas acting at once (the leader stops before a candidate may take over), with slow, hanging and
late-answered requests to the API server (our fake, delayed)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.doubles import virtualtime
from tests.doubles.fakekube import FakeKube
from webhook.controller.leader import MAX_IN_FLIGHT, LeaderElector, LeaseConfig, LostLeadership
from webhook.kube.resources import LEASE, Resource

CONFIG = LeaseConfig(namespace="ns", name="lead", lease_duration=15, renew_deadline=10, retry_period=2)
HANG = math.inf


@dataclass
class Delays:
    """Per request: seconds before it reaches the API server, seconds before its answer comes back."""

    before: float = 0.0
    after: float = 0.0


@dataclass
class DelayedKube:
    """A FakeKube reached over a network whose delays the test scripts: ``plan(verb, n)`` for the n-th request."""

    inner: FakeKube
    plan: Callable[[str, int], Delays] = field(default=lambda verb, n: Delays())
    requests: int = 0

    async def _wait(self, seconds: float) -> None:
        if seconds == HANG:
            await asyncio.Event().wait()  # until cancelled
        elif seconds:
            await asyncio.sleep(seconds)

    async def _call(self, verb: str, call: Callable[[], Any]) -> Any:
        delays = self.plan(verb, self.requests)
        self.requests += 1
        await self._wait(delays.before)
        result = await call()
        await self._wait(delays.after)
        return result

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> Any:
        return await self._call("get", lambda: self.inner.get(resource, name, namespace=namespace))

    async def create(self, resource: Resource, body: Any, **kwargs: Any) -> Any:
        return await self._call("create", lambda: self.inner.create(resource, body, **kwargs))

    async def replace(self, resource: Resource, body: Any, **kwargs: Any) -> Any:
        return await self._call("replace", lambda: self.inner.replace(resource, body, **kwargs))

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> Any:
        return await self._call("patch", lambda: self.inner.patch(resource, name, patch, **kwargs))


def elector(kube: Any, identity: str, config: LeaseConfig = CONFIG) -> LeaderElector:
    return LeaderElector(kube, config, identity=identity, monotonic=asyncio.get_running_loop().time)


def now() -> float:
    return asyncio.get_running_loop().time()


async def holder(kube: FakeKube) -> str:
    return str((await kube.get(LEASE, "lead", namespace="ns"))["spec"]["holderIdentity"])


async def hold_for(leader: LeaderElector, seconds: float) -> float | None:
    """Holds for ``seconds``; the instant leadership was lost, or None if it held throughout."""
    try:
        async with asyncio.timeout(seconds):
            await leader.hold()
    except LostLeadership:
        return now()
    except TimeoutError:
        return None
    raise AssertionError("hold() returned")


def test_one_hanging_request_does_not_lose_the_lease() -> None:
    async def scenario() -> None:
        fake = FakeKube()
        hung: list[int] = []
        first_renewal = -1

        def plan(verb: str, n: int) -> Delays:
            if n == first_renewal:  # the first renewal's request never comes back
                hung.append(n)
                return Delays(before=HANG)
            return Delays()

        kube = DelayedKube(fake, plan)
        leader = elector(kube, "a")
        await leader.acquire()
        first_renewal = kube.requests
        lost = await hold_for(leader, 60)
        assert hung == [first_renewal]
        assert lost is None, f"lost the Lease at +{lost}: one hanging request cost it"
        assert leader.is_leader
        assert now() - leader.last_renewal <= CONFIG.retry_period + 0.01, "renewals went on after the hung one"

    virtualtime.run(scenario())


def test_a_slow_api_server_keeps_the_lease_while_each_renewal_lands_within_the_deadline() -> None:
    async def scenario() -> None:
        fake = FakeKube()
        # Every request takes 6 s to be stored and its answer another 1 s: waiting for one renewal's answer before
        # sending the next (7 + 2 s) and counting from that answer would pass the renew deadline, and a read and a
        # write in a row (14 s) would too; renewals sent every retry period, each one request, do not.
        slow = False
        leader = elector(DelayedKube(fake, lambda verb, n: Delays(before=6, after=1) if slow else Delays()), "a")
        await leader.acquire()
        slow = True
        renewed_before = leader.renewals
        lost = await hold_for(leader, 120)
        assert lost is None, f"lost the Lease at {lost}"
        assert leader.renewals - renewed_before >= 10
        assert await holder(fake) == "a"

    virtualtime.run(scenario())


def test_loss_is_declared_at_the_renew_deadline_after_the_last_renewal_was_sent() -> None:
    async def scenario() -> None:
        fake = FakeKube()
        failing = False

        def plan(verb: str, n: int) -> Delays:
            return Delays(before=HANG) if failing else Delays(after=0.5)

        leader = elector(DelayedKube(fake, plan), "a")
        await leader.acquire()
        await hold_for(leader, 7)  # renewals sent at +2, +4, +6 (each answered 0.5 s after it was sent)
        failing = True
        sent = leader.last_renewal
        before = leader.attempts
        lost = await hold_for(leader, 60)
        assert lost == pytest.approx(sent + CONFIG.renew_deadline, abs=0.01)
        assert not leader.is_leader
        # One renewal every retry period until the deadline, none answered: +2, +4, +6 and +8 after the last.
        assert leader.attempts - before == 4

    virtualtime.run(scenario())


def test_another_holder_ends_leadership_at_the_next_attempt() -> None:
    async def scenario() -> None:
        fake = FakeKube()
        leader = elector(fake, "a")
        await leader.acquire()
        lease = await fake.get(LEASE, "lead", namespace="ns")
        lease["spec"]["holderIdentity"] = "intruder"
        await fake.replace(LEASE, lease)
        started = now()
        lost = await hold_for(leader, 60)
        assert lost is not None
        assert lost - started == pytest.approx(CONFIG.retry_period, abs=0.01)
        assert await holder(fake) == "intruder", "the leader must not take the Lease back"

    virtualtime.run(scenario())


@pytest.mark.parametrize("answer_delay", [0.0, 4.0, 7.0, 9.0])
def test_the_leader_stops_before_a_candidate_can_take_over(answer_delay: float) -> None:
    """The leader's last renewal is stored at once but its answer comes back ``answer_delay`` seconds late; from
    then on none of its requests reach the API server (a partition), while a candidate's do. The leader must have
    stopped acting before the candidate starts, whatever the delay (a leader counting its renewal from the answer
    would still act when the candidate takes over)."""

    async def scenario() -> None:
        fake = FakeKube()
        partitioned = False
        last_answer_delayed = False

        def leader_plan(verb: str, n: int) -> Delays:
            nonlocal last_answer_delayed
            if partitioned and last_answer_delayed:
                return Delays(before=HANG)
            if partitioned:
                last_answer_delayed = True
                return Delays(after=answer_delay)
            return Delays()

        leader = elector(DelayedKube(fake, leader_plan), "a")
        candidate = elector(fake, "b")
        await leader.acquire()
        took_over: list[float] = []

        async def campaign() -> None:
            await candidate.acquire()
            took_over.append(now())

        campaigning = asyncio.create_task(campaign())
        await hold_for(leader, 5)
        partitioned = True
        lost = await hold_for(leader, 60)
        await asyncio.wait_for(campaigning, 60)
        assert lost is not None
        assert took_over, "the candidate never took over"
        margin = took_over[0] - lost
        assert margin >= CONFIG.lease_duration - CONFIG.renew_deadline - 0.01, (
            f"the candidate took over {margin:.2f}s after the leader stopped"
        )
        assert await holder(fake) == "b"

    virtualtime.run(scenario())


def test_overlapping_attempts_never_exceed_the_cap() -> None:
    async def scenario() -> None:
        fake = FakeKube()
        in_flight = 0
        peak = 0
        failing = False

        class Counting(DelayedKube):
            async def _call(self, verb: str, call: Callable[[], Any]) -> Any:
                nonlocal in_flight, peak
                in_flight += 1
                peak = max(peak, in_flight)
                try:
                    return await super()._call(verb, call)
                finally:
                    in_flight -= 1

        often = LeaseConfig(namespace="ns", name="lead", lease_duration=15, renew_deadline=10, retry_period=1)
        leader = elector(Counting(fake, lambda verb, n: Delays(before=HANG) if failing else Delays()), "a", often)
        await leader.acquire()
        failing = True
        assert await hold_for(leader, 60) is not None
        assert peak == MAX_IN_FLIGHT
        assert in_flight == 0, "the attempts still waiting were cancelled when leadership ended"

    virtualtime.run(scenario())
