"""``ApiServerKube`` against the real kube-apiserver: every verb, error mapping, status subresource, watches.

Several tests pin the fake's behaviour to the server's (409 Conflict on a stale version, 422 for a failed JSON
patch test, status ignored by the main endpoint, 410 for a too-old watch version) so unit tests built on
``FakeKube`` stay honest.
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
from webhook.kube.resources import CONFIG_MAP, EVENT, JOB, NAMESPACE, WORKLOAD

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


async def test_list_follows_pages(kube: ApiServerKube, ns: str) -> None:
    # page_size=3: seven objects take three pages.
    for i in range(7):
        await kube.create(CONFIG_MAP, config_map(f"cm-{i}"), namespace=ns)
    listed = await kube.list(CONFIG_MAP, namespace=ns, label_selector="t=x")
    assert sorted(o["metadata"]["name"] for o in listed.items) == [f"cm-{i}" for i in range(7)]


async def test_generate_name_and_already_exists(kube: ApiServerKube, ns: str) -> None:
    made = await kube.create(CONFIG_MAP, {"metadata": {"generateName": "gen-"}}, namespace=ns)
    assert made["metadata"]["name"].startswith("gen-")
    with pytest.raises(errors.AlreadyExists) as caught:
        await kube.create(CONFIG_MAP, {"metadata": {"name": made["metadata"]["name"]}}, namespace=ns)
    assert caught.value.status == 409


async def test_replace_with_a_stale_version_conflicts(kube: ApiServerKube, ns: str) -> None:
    first = await kube.create(CONFIG_MAP, config_map("a", k="1"), namespace=ns)
    first["data"]["k"] = "2"
    second = await kube.replace(CONFIG_MAP, first)
    assert second["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    first["data"]["k"] = "3"
    with pytest.raises(errors.Conflict):
        await kube.replace(CONFIG_MAP, first)
    assert (await kube.get(CONFIG_MAP, "a", namespace=ns))["data"] == {"k": "2"}


async def test_merge_patch_json_patch_and_their_preconditions(kube: ApiServerKube, ns: str) -> None:
    created = await kube.create(CONFIG_MAP, config_map("a", k="1"), namespace=ns)
    merged = await kube.patch(CONFIG_MAP, "a", {"data": {"j": "2", "k": None}}, namespace=ns)
    assert merged["data"] == {"j": "2"}
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"x": "y"}}
    with pytest.raises(errors.Conflict):
        await kube.patch(CONFIG_MAP, "a", stale, namespace=ns)
    ops = [{"op": "test", "path": "/data/j", "value": "2"}, {"op": "replace", "path": "/data/j", "value": "3"}]
    patched = await kube.patch(CONFIG_MAP, "a", ops, namespace=ns, patch_type="json")
    assert patched["data"] == {"j": "3"}
    with pytest.raises(errors.Invalid) as caught:
        await kube.patch(CONFIG_MAP, "a", ops, namespace=ns, patch_type="json")  # the test now fails
    assert caught.value.status == 422


async def test_status_subresource_is_separate(kube: ApiServerKube, ns: str) -> None:
    body_with_status = {**workload(), "status": {"conditions": [condition("Ignored")]}}
    created = await kube.create(WORKLOAD, body_with_status, namespace=ns)
    assert not (created.get("status") or {}).get("conditions"), "create ignores status"
    with_status = await kube.patch_status(
        WORKLOAD, "wl", {"status": {"conditions": [condition("QuotaReserved")]}}, namespace=ns
    )
    assert [c["type"] for c in with_status["status"]["conditions"]] == ["QuotaReserved"]
    assert with_status["metadata"]["generation"] == created["metadata"]["generation"]
    # The main endpoint ignores status; the status endpoint ignores spec.
    after_main = await kube.patch(WORKLOAD, "wl", {"status": {"conditions": None}}, namespace=ns)
    assert [c["type"] for c in after_main["status"]["conditions"]] == ["QuotaReserved"]
    body = dict(after_main)
    body["spec"] = {**body["spec"], "active": False}
    body["status"] = {"conditions": [condition("Admitted")]}
    replaced = await kube.replace_status(WORKLOAD, body)
    assert replaced["spec"].get("active", True) is True
    assert [c["type"] for c in replaced["status"]["conditions"]] == ["Admitted"]
    with pytest.raises(errors.Conflict):
        await kube.replace_status(WORKLOAD, body)  # body's resourceVersion is now stale


async def test_custom_resources_refuse_unconditional_replace(kube: ApiServerKube, ns: str) -> None:
    # Built-in kinds accept a PUT without resourceVersion; custom resources (ours) do not. The fake agrees.
    created = await kube.create(WORKLOAD, workload(), namespace=ns)
    del created["metadata"]["resourceVersion"]
    with pytest.raises(errors.Invalid):
        await kube.replace(WORKLOAD, created)
    cm = await kube.create(CONFIG_MAP, config_map("a", k="1"), namespace=ns)
    del cm["metadata"]["resourceVersion"]
    cm["data"]["k"] = "2"
    assert (await kube.replace(CONFIG_MAP, cm))["data"] == {"k": "2"}


async def test_dry_run_persists_nothing(kube: ApiServerKube, ns: str) -> None:
    preview = await kube.create(CONFIG_MAP, config_map("dry"), namespace=ns, dry_run=True)
    assert preview["metadata"]["name"] == "dry"
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIG_MAP, "dry", namespace=ns)
    await kube.create(CONFIG_MAP, config_map("real", k="1"), namespace=ns)
    await kube.patch(CONFIG_MAP, "real", {"data": {"k": "2"}}, namespace=ns, dry_run=True)
    await kube.delete(CONFIG_MAP, "real", namespace=ns, dry_run=True)
    assert (await kube.get(CONFIG_MAP, "real", namespace=ns))["data"] == {"k": "1"}


async def test_delete_preconditions(kube: ApiServerKube, ns: str) -> None:
    created = await kube.create(CONFIG_MAP, config_map("a"), namespace=ns)
    with pytest.raises(errors.Conflict):
        await kube.delete(CONFIG_MAP, "a", namespace=ns, uid="00000000-0000-0000-0000-000000000000")
    await kube.delete(
        CONFIG_MAP,
        "a",
        namespace=ns,
        uid=created["metadata"]["uid"],
        resource_version=created["metadata"]["resourceVersion"],
        propagation_policy="Background",
    )
    with pytest.raises(errors.NotFound):
        await kube.delete(CONFIG_MAP, "a", namespace=ns)


async def test_invalid_object_is_invalid(kube: ApiServerKube, ns: str) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await kube.create(JOB, {"metadata": {"name": "no-template"}, "spec": {}}, namespace=ns)
    assert caught.value.status == 422
    assert caught.value.body is not None
    assert caught.value.body.get("kind") == "Status"


async def test_cluster_scoped_kind(kube: ApiServerKube) -> None:
    listed = await kube.list(NAMESPACE)
    assert "default" in {o["metadata"]["name"] for o in listed.items}
    assert (await kube.get(NAMESPACE, "default"))["kind"] == "Namespace"


async def collect(kube: ApiServerKube, count: int, **kwargs: Any) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    async with contextlib.aclosing(kube.watch(**kwargs)) as stream:
        async for event in stream:
            events.append(event)
            if len(events) == count:
                break
    return events


async def test_watch_from_a_version(kube: ApiServerKube, ns: str) -> None:
    start = (await kube.list(CONFIG_MAP, namespace=ns)).resource_version
    watching = asyncio.create_task(
        collect(kube, 3, resource=CONFIG_MAP, namespace=ns, resource_version=start, label_selector="t=x")
    )
    await kube.create(CONFIG_MAP, config_map("a", k="1"), namespace=ns)
    await kube.create(CONFIG_MAP, {"metadata": {"name": "unlabelled"}}, namespace=ns)
    await kube.patch(CONFIG_MAP, "a", {"data": {"k": "2"}}, namespace=ns)
    await kube.delete(CONFIG_MAP, "a", namespace=ns)
    events = await asyncio.wait_for(watching, 20)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]


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
