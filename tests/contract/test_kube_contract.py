"""The ``Kube`` contract, run against both implementations: the in-memory fake and the real kube-apiserver.

Every unit test built on ``FakeKube`` relies on the fake storing, versioning, conflicting and watching the way the
API server does. Each case here runs twice, once per implementation, with the same body and the same assertions,
so a difference between the two fails a test instead of hiding in a docstring. What only one side can do (the
fake's scripted faults and compaction; the real client's paging, TLS and unreachable servers) is tested in
``tests/unit/kube/test_fake.py`` and ``tests/integration/test_kube_client.py``.

Where the real server acts asynchronously (garbage collection, namespace deletion by kube-controller-manager) both
sides are polled with the same deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from webhook.kube import errors
from webhook.kube.apiserver import ApiServerKube
from webhook.kube.client import Kube
from webhook.kube.objects import Object, WatchEvent
from webhook.kube.resources import CONFIG_MAP, JOB, NAMESPACE, WORKLOAD
from webhook.local.cluster import LocalCluster

pytestmark = pytest.mark.integration

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass
class Side:
    """One implementation under test, with a namespace of its own."""

    kube: Kube
    ns: str


@pytest.fixture(params=["fake", "apiserver"])
async def side(request: pytest.FixtureRequest) -> AsyncIterator[Side]:
    name = f"contract-{os.urandom(3).hex()}"
    if request.param == "fake":
        fake = FakeKube()
        await fake.create(NAMESPACE, {"metadata": {"name": name}})
        yield Side(fake, name)
        return
    cluster: LocalCluster = request.getfixturevalue("cluster")
    async with ApiServerKube(kubeconfig=cluster.kubeconfig) as real:
        await real.create(NAMESPACE, {"metadata": {"name": name}})
        try:
            yield Side(real, name)
        finally:
            with contextlib.suppress(errors.KubeError):
                await real.delete(NAMESPACE, name, propagation_policy="Background")


def job(name: str = "job", *, queue: str | None = "q", parallelism: int = 1, **meta: Any) -> Object:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels, **meta},
        "spec": {
            "suspend": True,
            "parallelism": parallelism,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def workload(name: str = "wl", **meta: Any) -> Object:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, **meta},
        "spec": {
            "queueName": "q",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


def config_map(name: str, **data: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def condition(kind: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": "True",
        "reason": "Testing",
        "message": "set by the contract suite",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


async def eventually(check: Callable[[], Awaitable[bool]], *, within: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "the condition did not become true in time"
        await asyncio.sleep(0.1)


async def collect(kube: Kube, count: int, **kwargs: Any) -> list[WatchEvent]:
    """The first ``count`` non-bookmark events of a watch (or fewer, when the server ends it)."""
    events: list[WatchEvent] = []
    async with contextlib.aclosing(kube.watch(**kwargs)) as stream:
        async for event in stream:
            if event.type == "BOOKMARK":
                continue
            events.append(event)
            if len(events) == count:
                break
    return events


async def current_version(side: Side) -> str:
    return (await side.kube.list(WORKLOAD, namespace=side.ns)).resource_version


# --- storage -----------------------------------------------------------------------------------------------------


async def test_create_fills_server_fields_and_ignores_status(side: Side) -> None:
    created = await side.kube.create(JOB, {**job(), "status": {"active": 3}}, namespace=side.ns)
    meta = created["metadata"]
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    assert (created["apiVersion"], created["kind"]) == ("batch/v1", "Job")
    assert not (created.get("status") or {}).get("active"), "the main endpoint never writes status"


async def test_resource_versions_increase_across_kinds(side: Side) -> None:
    a = await side.kube.create(JOB, job("a"), namespace=side.ns)
    b = await side.kube.create(WORKLOAD, workload(), namespace=side.ns)
    c = await side.kube.patch(JOB, "a", {"spec": {"parallelism": 2}}, namespace=side.ns)
    versions = [int(o["metadata"]["resourceVersion"]) for o in (a, b, c)]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


async def test_generate_name_and_already_exists(side: Side) -> None:
    one = await side.kube.create(CONFIG_MAP, {"metadata": {"generateName": "gen-"}}, namespace=side.ns)
    two = await side.kube.create(CONFIG_MAP, {"metadata": {"generateName": "gen-"}}, namespace=side.ns)
    assert one["metadata"]["name"].startswith("gen-")
    assert len(one["metadata"]["name"]) == len("gen-") + 5
    assert one["metadata"]["name"] != two["metadata"]["name"]
    with pytest.raises(errors.AlreadyExists) as caught:
        await side.kube.create(CONFIG_MAP, {"metadata": {"name": one["metadata"]["name"]}}, namespace=side.ns)
    assert caught.value.status == 409


async def test_missing_object_is_not_found(side: Side) -> None:
    with pytest.raises(errors.NotFound):
        await side.kube.get(JOB, "nope", namespace=side.ns)
    with pytest.raises(errors.NotFound):
        await side.kube.patch(JOB, "nope", {"spec": {"suspend": False}}, namespace=side.ns)
    with pytest.raises(errors.NotFound):
        await side.kube.delete(JOB, "nope", namespace=side.ns)


# Writes that compare resourceVersions use Workloads: no controller of the test cluster touches them, while
# kube-controller-manager's job controller may write a Job's status at any moment.


async def test_replace_bumps_generation_and_a_stale_version_conflicts(side: Side) -> None:
    first = await side.kube.create(WORKLOAD, workload(), namespace=side.ns)
    first["spec"]["active"] = False
    updated = await side.kube.replace(WORKLOAD, first, namespace=side.ns)
    assert updated["metadata"]["generation"] == 2
    first["spec"]["priority"] = 5  # still carries the old resourceVersion
    with pytest.raises(errors.Conflict):
        await side.kube.replace(WORKLOAD, first, namespace=side.ns)
    stored = await side.kube.get(WORKLOAD, "wl", namespace=side.ns)
    assert (stored["spec"]["active"], stored["spec"].get("priority")) == (False, None)


async def test_metadata_changes_do_not_bump_generation(side: Side) -> None:
    await side.kube.create(JOB, job(), namespace=side.ns)
    labelled = await side.kube.patch(JOB, "job", {"metadata": {"labels": {"x": "1"}}}, namespace=side.ns)
    assert labelled["metadata"]["generation"] == 1


async def test_custom_resources_refuse_an_unconditional_replace(side: Side) -> None:
    created = await side.kube.create(WORKLOAD, workload(), namespace=side.ns)
    del created["metadata"]["resourceVersion"]
    with pytest.raises(errors.Invalid):
        await side.kube.replace(WORKLOAD, created, namespace=side.ns)
    cm = await side.kube.create(CONFIG_MAP, config_map("a", k="1"), namespace=side.ns)
    del cm["metadata"]["resourceVersion"]
    cm["data"]["k"] = "2"
    assert (await side.kube.replace(CONFIG_MAP, cm, namespace=side.ns))["data"] == {"k": "2"}


async def test_merge_patch_removes_nulls_and_honours_a_resource_version(side: Side) -> None:
    created = await side.kube.create(CONFIG_MAP, config_map("a", k="1"), namespace=side.ns)
    merged = await side.kube.patch(CONFIG_MAP, "a", {"data": {"j": "2", "k": None}}, namespace=side.ns)
    assert merged["data"] == {"j": "2"}
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"x": "y"}}
    with pytest.raises(errors.Conflict):
        await side.kube.patch(CONFIG_MAP, "a", stale, namespace=side.ns)
    current = {"metadata": {"resourceVersion": merged["metadata"]["resourceVersion"]}, "data": {"x": "y"}}
    assert (await side.kube.patch(CONFIG_MAP, "a", current, namespace=side.ns))["data"] == {"j": "2", "x": "y"}


async def test_json_patch_test_operation_guards_the_write(side: Side) -> None:
    await side.kube.create(WORKLOAD, workload(), namespace=side.ns)
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/spec/queueName", "value": "q"},
        {"op": "add", "path": "/spec/priority", "value": 4},
    ]
    patched = await side.kube.patch(WORKLOAD, "wl", ops, namespace=side.ns, patch_type="json")
    assert patched["spec"]["priority"] == 4
    ops[0]["value"] = "another-queue"
    ops[1]["value"] = 9
    with pytest.raises(errors.Invalid) as caught:
        await side.kube.patch(WORKLOAD, "wl", ops, namespace=side.ns, patch_type="json")
    assert caught.value.status == 422
    assert (await side.kube.get(WORKLOAD, "wl", namespace=side.ns))["spec"]["priority"] == 4


async def test_a_write_that_changes_nothing_keeps_the_resource_version(side: Side) -> None:
    created = await side.kube.create(WORKLOAD, workload(), namespace=side.ns)
    same = await side.kube.patch(WORKLOAD, "wl", {"spec": {"queueName": "q"}}, namespace=side.ns)
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_status_subresource_is_separate_from_the_main_endpoint(side: Side) -> None:
    created = await side.kube.create(
        WORKLOAD, {**workload(), "status": {"conditions": [condition("Ignored")]}}, namespace=side.ns
    )
    assert not (created.get("status") or {}).get("conditions"), "create ignores status"
    with_status = await side.kube.patch_status(
        WORKLOAD, "wl", {"status": {"conditions": [condition("QuotaReserved")]}}, namespace=side.ns
    )
    assert [c["type"] for c in with_status["status"]["conditions"]] == ["QuotaReserved"]
    assert with_status["metadata"]["generation"] == created["metadata"]["generation"], "status keeps generation"
    # The main endpoint ignores status ...
    after_main = await side.kube.patch(
        WORKLOAD, "wl", {"status": {"conditions": None}, "spec": {"active": False}}, namespace=side.ns
    )
    assert [c["type"] for c in after_main["status"]["conditions"]] == ["QuotaReserved"]
    assert after_main["metadata"]["generation"] == created["metadata"]["generation"] + 1
    # ... and the status endpoint ignores everything else.
    body = dict(after_main)
    body["spec"] = {**body["spec"], "active": True}
    body["status"] = {"conditions": [condition("Admitted")]}
    replaced = await side.kube.replace_status(WORKLOAD, body, namespace=side.ns)
    assert replaced["spec"]["active"] is False
    assert [c["type"] for c in replaced["status"]["conditions"]] == ["Admitted"]
    with pytest.raises(errors.Conflict):
        await side.kube.replace_status(WORKLOAD, body, namespace=side.ns)  # body's resourceVersion is now stale


async def test_a_status_replace_needs_only_the_objects_identity_and_its_status(side: Side) -> None:
    """What our status writes send: the Workload's identity (name, namespace, uid, resourceVersion) and its new
    status. The stored spec, labels, annotations and owner stay as they were; a stale resourceVersion conflicts."""
    # A real owner: with a made-up one, the API server's garbage collector may delete the Workload before the write.
    owned_by = await side.kube.create(CONFIG_MAP, config_map("owner"), namespace=side.ns)
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owned_by["metadata"]["uid"]}
    created = await side.kube.create(
        WORKLOAD,
        workload(labels={"team": "a"}, annotations={"note": "kept"}, ownerReferences=[owner]),
        namespace=side.ns,
    )
    meta = created["metadata"]
    identity = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion")}
    body = {
        "apiVersion": created["apiVersion"],
        "kind": created["kind"],
        "metadata": identity,
        "status": {"conditions": [condition("QuotaReserved")]},
    }
    written = await side.kube.replace_status(WORKLOAD, body, namespace=side.ns)
    assert [c["type"] for c in written["status"]["conditions"]] == ["QuotaReserved"]
    assert written["spec"] == created["spec"]
    for field in ("labels", "annotations", "ownerReferences", "generation", "creationTimestamp"):
        assert written["metadata"][field] == meta[field], field
    assert int(written["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    with pytest.raises(errors.Conflict):
        await side.kube.replace_status(WORKLOAD, body, namespace=side.ns)  # the same resourceVersion, now stale


async def test_a_kind_without_status_subresource_has_no_status_endpoint(side: Side) -> None:
    await side.kube.create(CONFIG_MAP, config_map("c"), namespace=side.ns)
    with pytest.raises(errors.NotFound):
        await side.kube.patch_status(CONFIG_MAP, "c", {"status": {"x": "y"}}, namespace=side.ns)


async def test_dry_run_persists_nothing(side: Side) -> None:
    preview = await side.kube.create(JOB, job("dry"), namespace=side.ns, dry_run=True)
    assert preview["metadata"]["name"] == "dry"
    with pytest.raises(errors.NotFound):
        await side.kube.get(JOB, "dry", namespace=side.ns)
    created = await side.kube.create(WORKLOAD, workload(), namespace=side.ns)
    await side.kube.patch(WORKLOAD, "wl", {"spec": {"active": False}}, namespace=side.ns, dry_run=True)
    await side.kube.delete(WORKLOAD, "wl", namespace=side.ns, dry_run=True)
    stored = await side.kube.get(WORKLOAD, "wl", namespace=side.ns)
    assert stored["spec"].get("active", True) is True
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_delete_preconditions(side: Side) -> None:
    created = await side.kube.create(CONFIG_MAP, config_map("a"), namespace=side.ns)
    with pytest.raises(errors.Conflict):
        await side.kube.delete(CONFIG_MAP, "a", namespace=side.ns, uid="00000000-0000-0000-0000-000000000000")
    with pytest.raises(errors.Conflict):
        await side.kube.delete(
            CONFIG_MAP, "a", namespace=side.ns, resource_version="1" + created["metadata"]["resourceVersion"]
        )
    await side.kube.delete(CONFIG_MAP, "a", namespace=side.ns, uid=created["metadata"]["uid"])
    with pytest.raises(errors.NotFound):
        await side.kube.get(CONFIG_MAP, "a", namespace=side.ns)


async def test_finalizers_hold_deletion_until_removed(side: Side) -> None:
    await side.kube.create(WORKLOAD, workload(finalizers=["turnstile.x-k8s.io/test"]), namespace=side.ns)
    lingering = await side.kube.delete(WORKLOAD, "wl", namespace=side.ns)
    assert lingering is not None
    assert lingering["metadata"]["deletionTimestamp"]
    assert (await side.kube.get(WORKLOAD, "wl", namespace=side.ns))["metadata"]["deletionTimestamp"]
    await side.kube.patch(WORKLOAD, "wl", {"metadata": {"finalizers": None}}, namespace=side.ns)
    with pytest.raises(errors.NotFound):
        await side.kube.get(WORKLOAD, "wl", namespace=side.ns)


@pytest.mark.parametrize(
    ("policy", "dependent_survives"),
    [
        pytest.param("Background", False, id="background-collects"),
        pytest.param("Foreground", False, id="foreground-collects"),
        pytest.param("Orphan", True, id="orphan-keeps"),
    ],
)
async def test_deleting_an_owner_collects_or_orphans_its_dependents(
    side: Side, policy: Any, dependent_survives: bool
) -> None:
    # The dependent is a ConfigMap: kube-controller-manager's garbage collector watches built-in kinds from its
    # start, while it discovers custom resources (a Workload) only on its periodic resync, up to 30 s later.
    owner = await side.kube.create(JOB, job(), namespace=side.ns)
    reference = {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": owner["metadata"]["uid"]}
    dependent_body = config_map("wl")
    dependent_body["metadata"]["ownerReferences"] = [reference]
    await side.kube.create(CONFIG_MAP, dependent_body, namespace=side.ns)
    await side.kube.delete(JOB, "job", namespace=side.ns, propagation_policy=policy)

    async def settled() -> bool:
        try:
            dependent = await side.kube.get(CONFIG_MAP, "wl", namespace=side.ns)
        except errors.NotFound:
            return not dependent_survives
        return dependent_survives and not dependent["metadata"].get("ownerReferences")

    await eventually(settled)


async def test_list_filters_by_namespace_label_and_field_selector(side: Side) -> None:
    await side.kube.create(JOB, job("a"), namespace=side.ns)
    await side.kube.create(JOB, job("b", queue=None), namespace=side.ns)
    created = await side.kube.create(JOB, job("c", queue="other"), namespace=side.ns)
    with_queue = await side.kube.list(JOB, namespace=side.ns, label_selector=QUEUE_LABEL)
    assert sorted(j["metadata"]["name"] for j in with_queue.items) == ["a", "c"]
    assert int(with_queue.resource_version) >= int(created["metadata"]["resourceVersion"])
    one_queue = await side.kube.list(JOB, namespace=side.ns, label_selector=f"{QUEUE_LABEL}=q")
    assert [j["metadata"]["name"] for j in one_queue.items] == ["a"]
    by_name = await side.kube.list(JOB, namespace=side.ns, field_selector="metadata.name=b")
    assert [j["metadata"]["name"] for j in by_name.items] == ["b"]
    across = await side.kube.list(JOB, label_selector=f"{QUEUE_LABEL}=other")
    assert (side.ns, "c") in {(j["metadata"]["namespace"], j["metadata"]["name"]) for j in across.items}
    assert all(j["kind"] == "Job" for j in across.items)


async def test_a_list_with_each_is_made_of_what_each_returned_for_every_item(side: Side) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    await side.kube.create(CONFIG_MAP, body, namespace=side.ns)
    await side.kube.create(CONFIG_MAP, body | {"metadata": {"name": "b"}}, namespace=side.ns)
    plain = await side.kube.list(CONFIG_MAP, namespace=side.ns, without_managed_fields=True)
    seen: list[Object] = []

    def each(item: Object) -> Object:
        seen.append(item)
        return {"name": item["metadata"]["name"], "managed": "managedFields" in item["metadata"]}

    made = await side.kube.list(CONFIG_MAP, namespace=side.ns, without_managed_fields=True, each=each)
    assert seen == plain.items, "each item, as the list would have held it"
    assert made.items == [{"name": c["metadata"]["name"], "managed": False} for c in plain.items]


async def test_a_list_without_managed_fields_is_the_list_less_them(side: Side) -> None:
    # A ConfigMap: no controller writes it between the list and the get (the job controller adds a Job's
    # Suspended condition at any moment, which made this compare two versions).
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    await side.kube.create(CONFIG_MAP, body, namespace=side.ns)
    await side.kube.create(CONFIG_MAP, body | {"metadata": {"name": "b"}}, namespace=side.ns)
    slim = await side.kube.list(CONFIG_MAP, namespace=side.ns, without_managed_fields=True)
    assert all("managedFields" not in c["metadata"] for c in slim.items)
    ours = [c for c in slim.items if c["metadata"]["name"] in ("a", "b")]  # not kube-root-ca.crt
    assert sorted(c["metadata"]["name"] for c in ours) == ["a", "b"]
    for item in ours:
        stored = await side.kube.get(CONFIG_MAP, item["metadata"]["name"], namespace=side.ns)
        assert stored["metadata"].get("managedFields") or isinstance(side.kube, FakeKube), "the server writes them"
        meta = {k: v for k, v in stored["metadata"].items() if k != "managedFields"}
        assert item == stored | {"metadata": meta}


async def test_cluster_scoped_objects_have_no_namespace(side: Side) -> None:
    namespace = await side.kube.get(NAMESPACE, side.ns)
    assert namespace["kind"] == "Namespace"
    assert "namespace" not in namespace["metadata"]
    assert side.ns in {n["metadata"]["name"] for n in (await side.kube.list(NAMESPACE)).items}


async def test_deleting_a_namespace_deletes_what_it_holds(side: Side) -> None:
    await side.kube.create(CONFIG_MAP, config_map("held"), namespace=side.ns)
    await side.kube.delete(NAMESPACE, side.ns)

    async def emptied() -> bool:
        try:
            await side.kube.get(CONFIG_MAP, "held", namespace=side.ns)
        except errors.NotFound:
            return True
        return False

    await eventually(emptied)


# --- watches -----------------------------------------------------------------------------------------------------
# On Workloads, for the reason given above: a Job's status may change under the test and add MODIFIED events.


def labelled(name: str) -> Object:
    return workload(name, labels={QUEUE_LABEL: "q"})


async def test_watch_delivers_the_changes_after_a_version(side: Side) -> None:
    await side.kube.create(WORKLOAD, labelled("before"), namespace=side.ns)
    start = await current_version(side)
    watching = asyncio.create_task(
        collect(side.kube, 3, resource=WORKLOAD, namespace=side.ns, resource_version=start, label_selector=QUEUE_LABEL)
    )
    await asyncio.sleep(0.2)
    await side.kube.create(WORKLOAD, labelled("a"), namespace=side.ns)
    await side.kube.create(WORKLOAD, workload("unlabelled"), namespace=side.ns)
    await side.kube.patch(WORKLOAD, "a", {"spec": {"priority": 2}}, namespace=side.ns)
    await side.kube.delete(WORKLOAD, "a", namespace=side.ns, propagation_policy="Background")
    events = await asyncio.wait_for(watching, 20)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]
    assert events[1].object["spec"]["priority"] == 2


async def test_watch_replays_what_happened_since_an_older_version(side: Side) -> None:
    start = await current_version(side)
    await side.kube.create(WORKLOAD, labelled("a"), namespace=side.ns)
    await side.kube.create(WORKLOAD, labelled("b"), namespace=side.ns)
    events = await asyncio.wait_for(
        collect(side.kube, 2, resource=WORKLOAD, namespace=side.ns, resource_version=start), 20
    )
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


async def test_a_label_selector_turns_label_changes_into_added_and_deleted(side: Side) -> None:
    await side.kube.create(WORKLOAD, workload("a"), namespace=side.ns)
    start = await current_version(side)
    await side.kube.patch(WORKLOAD, "a", {"metadata": {"labels": {QUEUE_LABEL: "q"}}}, namespace=side.ns)
    await side.kube.patch(WORKLOAD, "a", {"metadata": {"labels": {QUEUE_LABEL: None}}}, namespace=side.ns)
    events = await asyncio.wait_for(
        collect(side.kube, 2, resource=WORKLOAD, namespace=side.ns, resource_version=start, label_selector=QUEUE_LABEL),
        20,
    )
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("DELETED", "a")]


async def test_a_watch_from_version_zero_starts_with_the_current_objects(side: Side) -> None:
    await side.kube.create(WORKLOAD, labelled("a"), namespace=side.ns)
    events = await asyncio.wait_for(
        collect(side.kube, 1, resource=WORKLOAD, namespace=side.ns, resource_version="0"), 20
    )
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "a")]


async def test_a_watch_ends_at_its_timeout(side: Side) -> None:
    start = await current_version(side)
    events = await asyncio.wait_for(
        collect(side.kube, 1, resource=WORKLOAD, namespace=side.ns, resource_version=start, timeout_seconds=1), 20
    )
    assert events == []
