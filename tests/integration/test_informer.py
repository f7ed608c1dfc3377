"""Informers and the cache against the real kube-apiserver + etcd.

The re-list test produces a genuine 410: v1 Events are served from etcd (no watch cache), so after we compact
etcd past the informer's resourceVersion the server itself answers its next watch with "too old". Only the
network partition that keeps the informer away while that happens is simulated, by a ``Kube`` wrapper of ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from webhook.controller.backoff import Backoff
from webhook.controller.cache import ClusterCache
from webhook.controller.informer import Informer, WatchSpec
from webhook.controller.supervisor import Supervisor
from webhook.controller.watches import CACHE_WATCHES, build_cache, start_watches
from webhook.kube import errors
from webhook.kube.apiserver import ApiServerKube
from webhook.kube.objects import Object, ObjectKey, WatchEvent
from webhook.kube.resources import CONFIG_MAP, EVENT, JOB, Resource

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(cluster: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"inf-{request.node.name.lower().replace('_', '-')[:40].strip('-')}-{os.urandom(2).hex()}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
async def kube(cluster: Any) -> AsyncIterator[ApiServerKube]:
    async with ApiServerKube(kubeconfig=cluster.kubeconfig) as client:
        yield client


async def eventually(check: Callable[[], bool], *, within: float = 20.0) -> None:
    async with asyncio.timeout(within):
        while not check():  # noqa: ASYNC110 - polling a condition that spans several objects
            await asyncio.sleep(0.02)


def names(cache: ClusterCache, resource: Resource) -> list[str]:
    return sorted(o["metadata"]["name"] for o in cache.items(resource))


def event(name: str, namespace: str) -> Object:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": namespace},
        "reason": "Testing",
        "message": "informer test",
        "type": "Normal",
    }


def compact_etcd(cluster: Any, revision: str) -> None:
    """Compact etcd up to ``revision`` through its HTTP gateway, as the API server does every 5 minutes."""
    port = cluster.state.etcd_port  # LocalCluster's state; the control plane runs etcd on localhost
    body = json.dumps({"revision": revision, "physical": True}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v3/kv/compaction", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


class Partition:
    """Our ``Kube`` with the watch connection cut on demand: new watches fail with ``Retryable``."""

    def __init__(self, inner: ApiServerKube) -> None:
        self.inner = inner
        self.cut = False
        self.refused = 0
        self.server_errors: list[errors.KubeError] = []

    async def list(self, resource: Resource, **kwargs: Any) -> Any:
        return await self.inner.list(resource, **kwargs)

    async def watch(self, resource: Resource, **kwargs: Any) -> AsyncGenerator[WatchEvent, None]:
        if self.cut:
            self.refused += 1
            raise errors.Retryable("partitioned (simulated)")
        try:
            async with contextlib.aclosing(self.inner.watch(resource, **kwargs)) as stream:
                async for item in stream:
                    yield item
        except errors.KubeError as e:
            self.server_errors.append(e)
            raise


async def test_informer_follows_a_namespace(kube: ApiServerKube, ns: str) -> None:
    cache = ClusterCache([CONFIG_MAP])
    informer = Informer(kube, WatchSpec(CONFIG_MAP, namespace=ns), cache, backoff=Backoff(initial=0.05, cap=0.2))
    await kube.create(CONFIG_MAP, {"metadata": {"name": "before"}}, namespace=ns)
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:configmaps")
        await asyncio.wait_for(informer.wait_synced(), 20)
        assert "before" in names(cache, CONFIG_MAP)
        await kube.create(CONFIG_MAP, {"metadata": {"name": "after"}}, namespace=ns)
        await kube.patch(CONFIG_MAP, "before", {"data": {"k": "v"}}, namespace=ns)
        await eventually(lambda: "after" in names(cache, CONFIG_MAP))
        await eventually(lambda: (cache.get(CONFIG_MAP, ObjectKey(ns, "before")) or {}).get("data") == {"k": "v"})
        await kube.delete(CONFIG_MAP, "before", namespace=ns)
        await eventually(lambda: "before" not in names(cache, CONFIG_MAP))
    assert informer.lists == 1


async def test_informer_rewatches_when_the_server_ends_the_watch(kube: ApiServerKube, ns: str) -> None:
    cache = ClusterCache([CONFIG_MAP])
    informer = Informer(
        kube,
        WatchSpec(CONFIG_MAP, namespace=ns),
        cache,
        backoff=Backoff(initial=0.05, cap=0.2),
        watch_timeout=(1, 1),  # the server closes each watch after a second
    )
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:configmaps")
        await asyncio.wait_for(informer.wait_synced(), 20)
        await eventually(lambda: informer.watches >= 3)
        await kube.create(CONFIG_MAP, {"metadata": {"name": "late"}}, namespace=ns)
        await eventually(
            lambda: names(cache, CONFIG_MAP) == ["kube-root-ca.crt", "late"] or names(cache, CONFIG_MAP) == ["late"]
        )
    assert informer.lists == 1, "an ended watch resumes from its version; it never re-lists"


async def test_informer_relists_after_a_real_410(cluster: Any, kube: ApiServerKube, ns: str) -> None:
    partition = Partition(kube)
    cache = ClusterCache([EVENT])
    informer = Informer(
        partition,  # type: ignore[arg-type]  # implements the two verbs an informer uses
        WatchSpec(EVENT, namespace=ns),
        cache,
        backoff=Backoff(initial=0.05, cap=0.2),
        watch_timeout=(1, 1),
    )
    await kube.create(EVENT, event("doomed", ns), namespace=ns)
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:events")
        await asyncio.wait_for(informer.wait_synced(), 20)
        assert names(cache, EVENT) == ["doomed"]
        stale = informer.resource_version
        # 1. Cut the connection and wait until the informer is really outside (its watch ended, reconnects fail).
        partition.cut = True
        await eventually(lambda: partition.refused >= 1)
        # 2. Meanwhile the world moves on and etcd compacts past the informer's version.
        await kube.delete(EVENT, "doomed", namespace=ns)
        created = await kube.create(EVENT, event("newcomer", ns), namespace=ns)
        compact_etcd(cluster, created["metadata"]["resourceVersion"])
        assert informer.resource_version == stale
        # 3. Heal: the server answers the old version with 410; the informer lists again and catches up.
        partition.cut = False
        await eventually(lambda: informer.lists == 2)
        await eventually(lambda: names(cache, EVENT) == ["newcomer"])
    assert any(isinstance(e, errors.Gone) and e.status == 410 for e in partition.server_errors)


async def test_the_cache_watches_sync_against_the_real_server(kube: ApiServerKube, ns: str) -> None:
    # Every kind the cache holds (our CRDs included) is listed and watched at its real path.
    cache = build_cache()
    container = {"name": "c", "image": "busybox", "command": ["true"]}
    template = {"spec": {"restartPolicy": "Never", "containers": [container]}}

    def job(name: str, labels: dict[str, str]) -> Object:
        return {"metadata": {"name": name, "labels": labels}, "spec": {"suspend": True, "template": template}}

    async with Supervisor() as tasks:
        informers = start_watches(kube, cache, tasks)
        await asyncio.wait_for(cache.wait_synced(), 30)
        assert all(i.synced for i in informers)
        assert len(informers) == len(CACHE_WATCHES)
        await kube.create(JOB, job("plain", {}), namespace=ns)
        await kube.create(JOB, job("queued", {"kueue.x-k8s.io/queue-name": "user-queue"}), namespace=ns)
        await eventually(lambda: cache.job(ns, "queued") is not None)
        await eventually(lambda: cache.namespace_labels(ns) is not None)
        # Every Job: one that slipped past the webhook unlabelled must be seen to be queued.
        await eventually(lambda: cache.job(ns, "plain") is not None)
    assert cache.synced()
