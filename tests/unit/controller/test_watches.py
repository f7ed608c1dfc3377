import asyncio

from tests.doubles.fakekube import FakeKube
from webhook.controller.supervisor import Supervisor
from webhook.controller.watches import CACHE_WATCHES, build_cache, start_watches
from webhook.kube import resources as r


async def test_every_cached_kind_gets_a_named_supervised_informer() -> None:
    kube = FakeKube()
    await kube.create(r.JOB, {"metadata": {"name": "plain", "namespace": "ns"}})
    await kube.create(
        r.JOB, {"metadata": {"name": "queued", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}}}
    )
    await kube.create(r.POD, {"metadata": {"name": "other", "namespace": "ns"}})
    await kube.create(
        r.POD, {"metadata": {"name": "managed", "namespace": "ns", "labels": {"kueue.x-k8s.io/managed": "true"}}}
    )
    await kube.create(r.NAMESPACE, {"metadata": {"name": "ns"}})
    cache = build_cache()
    async with Supervisor() as tasks:
        informers = start_watches(kube, cache, tasks)
        await asyncio.wait_for(cache.wait_synced(), 2)
        assert sorted(tasks.names) == sorted(f"watch:{spec.resource}" for spec in CACHE_WATCHES)
    assert len(informers) == len(CACHE_WATCHES) == 12
    # Every Job: one that slipped past the webhook unlabelled must be seen to be queued.
    assert sorted(j["metadata"]["name"] for j in cache.jobs()) == ["plain", "queued"]
    assert [p.name for p in cache.pods()] == ["managed"]
    assert cache.namespace_labels("ns") == {}
