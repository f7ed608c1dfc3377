"""The leader's renewal against the real kube-apiserver: the JSON patch that tests the holder renews the Lease, and
fails (ending leadership at once) when another identity holds it or the Lease is gone: the answers the unit tests
assume the API server gives."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from webhook.controller.leader import LeaderElector, LeaseConfig, LostLeadership
from webhook.kube.apiserver import ApiServerKube
from webhook.kube.resources import LEASE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
async def kube(cluster: Any) -> AsyncIterator[ApiServerKube]:
    async with ApiServerKube(kubeconfig=cluster.kubeconfig) as client:
        yield client


@pytest.fixture
def config(cluster: Any) -> LeaseConfig:
    namespace = f"lease-{os.urandom(3).hex()}"
    cluster.kubectl("create", "namespace", namespace)
    return LeaseConfig(namespace=namespace, name="lead", lease_duration=3, renew_deadline=2, retry_period=0.2)


async def spec(kube: ApiServerKube, config: LeaseConfig) -> dict[str, Any]:
    return dict((await kube.get(LEASE, config.name, namespace=config.namespace))["spec"])


async def test_renewals_move_the_renew_time_and_keep_the_holder(kube: ApiServerKube, config: LeaseConfig) -> None:
    leader = LeaderElector(kube, config, identity="a")
    await leader.acquire()
    first = await spec(kube, config)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(1.0):
            await leader.hold()
    after = await spec(kube, config)
    assert after["holderIdentity"] == "a"
    assert after["renewTime"] > first["renewTime"]
    assert after["acquireTime"] == first["acquireTime"]
    assert leader.renewals >= 3


async def test_a_lease_taken_by_another_identity_ends_leadership_at_the_next_renewal(
    kube: ApiServerKube, config: LeaseConfig
) -> None:
    leader = LeaderElector(kube, config, identity="a")
    await leader.acquire()
    lease = await kube.get(LEASE, config.name, namespace=config.namespace)
    lease["spec"]["holderIdentity"] = "b"
    await kube.replace(LEASE, lease)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(LostLeadership, match="no longer held"):
        await asyncio.wait_for(leader.hold(), 10)
    assert loop.time() - started < config.renew_deadline, "ended at the first renewal, not at the deadline"
    assert (await spec(kube, config))["holderIdentity"] == "b", "the renewal did not overwrite the takeover"


async def test_a_deleted_lease_ends_leadership(kube: ApiServerKube, config: LeaseConfig) -> None:
    leader = LeaderElector(kube, config, identity="a")
    await leader.acquire()
    await kube.delete(LEASE, config.name, namespace=config.namespace)
    with pytest.raises(LostLeadership, match="deleted"):
        await asyncio.wait_for(leader.hold(), 10)
