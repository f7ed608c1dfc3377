"""``ApiServerKube`` against the real kube-apiserver: what only the real client does (paging, error bodies, etcd
compaction, unreachable servers, its lifecycle).

The behaviour both implementations of ``Kube`` share is specified once, in ``tests/contract/test_kube_contract.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.kube import errors
from webhook.kube.apiserver import ApiServerKube
from webhook.kube.objects import Object, WatchEvent
from webhook.kube.resources import CONFIG_MAP, EVENT, JOB, NAMESPACE

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(cluster: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"kc-{request.node.name.lower().replace('_', '-')[:40].strip('-')}-{os.urandom(2).hex()}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
async def kube(cluster: Any) -> AsyncIterator[ApiServerKube]:
    async with ApiServerKube(kubeconfig=cluster.kubeconfig, page_size=3) as client:
        yield client


def config_map(name: str, **data: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"t": "x"}}, "data": data}


def workload(name: str = "wl") -> Object:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "user-queue",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


def condition(kind: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": "False",
        "reason": "Pending",
        "message": "waiting",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


async def test_create_get_list_delete(kube: ApiServerKube, ns: str) -> None:
    created = await kube.create(CONFIG_MAP, config_map("a", k="v"), namespace=ns)
    assert created["metadata"]["uid"]
    assert created["metadata"]["resourceVersion"]
    fetched = await kube.get(CONFIG_MAP, "a", namespace=ns)
    assert fetched["data"] == {"k": "v"}
    listed = await kube.list(CONFIG_MAP, namespace=ns, label_selector="t=x")
    assert [(o["kind"], o["metadata"]["name"]) for o in listed.items] == [("ConfigMap", "a")]
    assert int(listed.resource_version) >= int(created["metadata"]["resourceVersion"])
    gone = await kube.delete(CONFIG_MAP, "a", namespace=ns)
    assert gone is None or gone["metadata"]["name"] == "a"
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIG_MAP, "a", namespace=ns)


async def test_writes_are_recorded_under_our_name(kube: ApiServerKube, ns: str) -> None:
    created = await kube.create(CONFIG_MAP, config_map("named", k="v"), namespace=ns)
    assert [m["manager"] for m in created["metadata"]["managedFields"]] == ["turnstile"]


async def test_list_follows_pages(kube: ApiServerKube, ns: str) -> None:
    # page_size=3: seven objects take three pages.
    for i in range(7):
        await kube.create(CONFIG_MAP, config_map(f"cm-{i}"), namespace=ns)
    listed = await kube.list(CONFIG_MAP, namespace=ns, label_selector="t=x")
    assert sorted(o["metadata"]["name"] for o in listed.items) == [f"cm-{i}" for i in range(7)]


async def test_invalid_object_is_invalid(kube: ApiServerKube, ns: str) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await kube.create(JOB, {"metadata": {"name": "no-template"}, "spec": {}}, namespace=ns)
    assert caught.value.status == 422
    assert caught.value.body is not None
    assert caught.value.body.get("kind") == "Status"


async def collect(kube: ApiServerKube, count: int, **kwargs: Any) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    async with contextlib.aclosing(kube.watch(**kwargs)) as stream:
        async for event in stream:
            events.append(event)
            if len(events) == count:
                break
    return events


async def test_watch_ends_when_the_server_times_it_out(kube: ApiServerKube, ns: str) -> None:
    start = (await kube.list(CONFIG_MAP, namespace=ns)).resource_version
    events = await asyncio.wait_for(
        collect(kube, 100, resource=CONFIG_MAP, namespace=ns, resource_version=start, timeout_seconds=1), 20
    )
    assert all(e.type == "BOOKMARK" for e in events)


async def test_watch_from_a_compacted_version_is_gone(cluster: Any, kube: ApiServerKube, ns: str) -> None:
    # v1 Events have no watch cache: the watch goes to etcd, which refuses revisions it has compacted away.
    # We compact etcd ourselves (the API server would within 5 minutes) and the server answers 410.
    body = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": ns},
        "reason": "Testing",
        "message": "first",
    }
    first = await kube.create(EVENT, body, namespace=ns)
    await kube.patch(EVENT, "e", {"message": "second"}, namespace=ns)
    latest = await kube.patch(EVENT, "e", {"message": "third"}, namespace=ns)
    # Compact beyond the first change after ``first``: the watch would have to start inside the compacted range.
    compact_etcd(cluster, latest["metadata"]["resourceVersion"])
    stale = first["metadata"]["resourceVersion"]
    with pytest.raises(errors.Gone) as caught:
        await asyncio.wait_for(collect(kube, 1, resource=EVENT, namespace=ns, resource_version=stale), 20)
    assert caught.value.status == 410


def compact_etcd(cluster: Any, revision: str) -> None:
    """Compact etcd up to ``revision`` through its HTTP gateway, as the API server does every 5 minutes."""
    port = cluster.state.etcd_port  # LocalCluster's state; the control plane runs etcd on localhost
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v3/kv/compaction",
        data=json.dumps({"revision": revision, "physical": True}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


async def test_unreachable_server_is_retryable(cluster: Any, tmp_path: Path) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:9"  # the discard port: nothing listens
    dead = tmp_path / "kubeconfig"
    dead.write_text(json.dumps(config))
    async with ApiServerKube(kubeconfig=dead, request_timeout=5) as client:
        with pytest.raises(errors.Retryable):
            await client.get(NAMESPACE, "default")


async def test_used_outside_async_with_is_an_error(cluster: Any) -> None:
    client = ApiServerKube(kubeconfig=cluster.kubeconfig)
    with pytest.raises(RuntimeError, match="async with"):
        await client.get(NAMESPACE, "default")
