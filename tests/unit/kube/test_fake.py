"""The fake must behave like the API server where the reconciler's correctness depends on it."""

import asyncio
import contextlib
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object, WatchEvent
from webhook.kube.resources import CONFIG_MAP, JOB, NAMESPACE, WORKLOAD


def make_job(name: str = "job", *, namespace: str = "ns", queue: str | None = "q", **meta: Any) -> Object:
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels, **meta},
        "spec": {"suspend": True, "parallelism": 1},
        "status": {"active": 3},
    }


def make_workload(name: str = "wl", *, namespace: str = "ns", owner_uid: str | None = None) -> Object:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": owner_uid}]
    return {"metadata": meta, "spec": {"queueName": "q", "podSets": []}}


async def collect(kube: FakeKube, count: int, **kwargs: Any) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    async with contextlib.aclosing(kube.watch(**kwargs)) as stream:
        async for event in stream:
            events.append(event)
            if len(events) == count:
                break
    return events


def test_fake_satisfies_the_protocol() -> None:
    kube: Kube = FakeKube()
    assert kube is not None


async def test_create_fills_server_fields_and_drops_status() -> None:
    kube = FakeKube()
    job = await kube.create(JOB, make_job())
    meta = job["metadata"]
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    assert job["kind"] == "Job"
    assert job["apiVersion"] == "batch/v1"
    assert "status" not in job, "the main endpoint never writes status"


async def test_resource_versions_increase_across_kinds() -> None:
    kube = FakeKube()
    a = await kube.create(JOB, make_job("a"))
    b = await kube.create(WORKLOAD, make_workload())
    c = await kube.patch(JOB, "a", {"spec": {"parallelism": 2}}, namespace="ns")
    versions = [int(o["metadata"]["resourceVersion"]) for o in (a, b, c)]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


async def test_generate_name() -> None:
    kube = FakeKube()
    one = await kube.create(JOB, {"metadata": {"generateName": "job-", "namespace": "ns"}})
    two = await kube.create(JOB, {"metadata": {"generateName": "job-", "namespace": "ns"}})
    assert one["metadata"]["name"].startswith("job-")
    assert len(one["metadata"]["name"]) == 9
    assert one["metadata"]["name"] != two["metadata"]["name"]


async def test_create_twice_is_already_exists() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job())
    with pytest.raises(errors.AlreadyExists):
        await kube.create(JOB, make_job())


async def test_get_missing_is_not_found() -> None:
    with pytest.raises(errors.NotFound):
        await FakeKube().get(JOB, "nope", namespace="ns")


async def test_replace_with_stale_version_conflicts() -> None:
    kube = FakeKube()
    first = await kube.create(JOB, make_job())
    first["spec"]["parallelism"] = 2
    updated = await kube.replace(JOB, first)
    assert updated["metadata"]["generation"] == 2
    first["spec"]["parallelism"] = 3  # still carries the old resourceVersion
    with pytest.raises(errors.Conflict):
        await kube.replace(JOB, first)
    assert (await kube.get(JOB, "job", namespace="ns"))["spec"]["parallelism"] == 2


async def test_merge_patch_with_resource_version_is_a_precondition() -> None:
    kube = FakeKube()
    job = await kube.create(JOB, make_job())
    stale = job["metadata"]["resourceVersion"]
    await kube.patch(JOB, "job", {"metadata": {"labels": {"x": "1"}}}, namespace="ns")
    with pytest.raises(errors.Conflict):
        await kube.patch(
            JOB, "job", {"metadata": {"resourceVersion": stale}, "spec": {"suspend": False}}, namespace="ns"
        )


async def test_status_is_separate_from_the_main_endpoint() -> None:
    kube = FakeKube()
    await kube.create(WORKLOAD, make_workload())
    with_status = await kube.patch_status(
        WORKLOAD, "wl", {"status": {"admission": {"clusterQueue": "cq"}}}, namespace="ns"
    )
    assert with_status["status"]["admission"] == {"clusterQueue": "cq"}
    assert with_status["metadata"]["generation"] == 1, "status writes do not bump generation"
    # The main endpoint ignores status changes ...
    patched = await kube.patch(WORKLOAD, "wl", {"status": None, "spec": {"active": False}}, namespace="ns")
    assert patched["status"]["admission"] == {"clusterQueue": "cq"}
    assert patched["metadata"]["generation"] == 2
    # ... and the status endpoint ignores everything else.
    body = await kube.get(WORKLOAD, "wl", namespace="ns")
    body["spec"]["active"] = True
    body["status"] = {"conditions": []}
    replaced = await kube.replace_status(WORKLOAD, body)
    assert replaced["spec"]["active"] is False
    assert replaced["status"] == {"conditions": []}


async def test_status_write_with_stale_version_conflicts() -> None:
    kube = FakeKube()
    wl = await kube.create(WORKLOAD, make_workload())
    await kube.patch(WORKLOAD, "wl", {"metadata": {"labels": {"a": "b"}}}, namespace="ns")
    wl["status"] = {"admission": {"clusterQueue": "cq"}}
    with pytest.raises(errors.Conflict):
        await kube.replace_status(WORKLOAD, wl)


async def test_kind_without_status_subresource_has_no_status_endpoint() -> None:
    kube = FakeKube()
    await kube.create(CONFIG_MAP, {"metadata": {"name": "c", "namespace": "ns"}, "data": {}})
    with pytest.raises(errors.NotFound):
        await kube.patch_status(CONFIG_MAP, "c", {"status": {}}, namespace="ns")


async def test_json_patch_test_operation_guards_the_write() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job())
    ops = [
        {"op": "test", "path": "/spec/suspend", "value": False},
        {"op": "replace", "path": "/spec/parallelism", "value": 9},
    ]
    with pytest.raises(errors.Invalid):
        await kube.patch(JOB, "job", ops, namespace="ns", patch_type="json")
    assert (await kube.get(JOB, "job", namespace="ns"))["spec"]["parallelism"] == 1


async def test_noop_write_keeps_the_resource_version() -> None:
    kube = FakeKube()
    job = await kube.create(JOB, make_job())
    same = await kube.patch(JOB, "job", {"spec": {"suspend": True}}, namespace="ns")
    assert same["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]


async def test_dry_run_persists_nothing() -> None:
    kube = FakeKube()
    preview = await kube.create(JOB, make_job(), dry_run=True)
    assert preview["metadata"]["name"] == "job"
    assert kube.objects(JOB) == []
    assert kube.actions == []
    await kube.create(JOB, make_job())
    version = kube.resource_version
    await kube.patch(JOB, "job", {"spec": {"suspend": False}}, namespace="ns", dry_run=True)
    await kube.delete(JOB, "job", namespace="ns", dry_run=True)
    assert kube.resource_version == version
    assert (await kube.get(JOB, "job", namespace="ns"))["spec"]["suspend"] is True


async def test_delete_preconditions() -> None:
    kube = FakeKube()
    job = await kube.create(JOB, make_job())
    with pytest.raises(errors.Conflict):
        await kube.delete(JOB, "job", namespace="ns", uid="someone-else")
    with pytest.raises(errors.Conflict):
        await kube.delete(JOB, "job", namespace="ns", resource_version="1" + job["metadata"]["resourceVersion"])
    await kube.delete(JOB, "job", namespace="ns", uid=job["metadata"]["uid"])
    with pytest.raises(errors.NotFound):
        await kube.get(JOB, "job", namespace="ns")


async def test_finalizers_hold_deletion_until_removed() -> None:
    kube = FakeKube()
    await kube.create(
        WORKLOAD, {**make_workload(), "metadata": {"name": "wl", "namespace": "ns", "finalizers": ["x/y"]}}
    )
    lingering = await kube.delete(WORKLOAD, "wl", namespace="ns")
    assert lingering is not None
    assert lingering["metadata"]["deletionTimestamp"]
    assert await kube.get(WORKLOAD, "wl", namespace="ns")
    await kube.patch(WORKLOAD, "wl", {"metadata": {"finalizers": None}}, namespace="ns")
    with pytest.raises(errors.NotFound):
        await kube.get(WORKLOAD, "wl", namespace="ns")


@pytest.mark.parametrize(
    ("policy", "workload_survives"),
    [
        pytest.param("Background", False, id="background-collects"),
        pytest.param("Foreground", False, id="foreground-collects"),
        pytest.param("Orphan", True, id="orphan-keeps"),
        pytest.param(None, True, id="jobs-default-to-orphan"),
    ],
)
async def test_owner_deletion_garbage_collects_dependents(policy: Any, workload_survives: bool) -> None:
    kube = FakeKube()
    job = await kube.create(JOB, make_job())
    await kube.create(WORKLOAD, make_workload(owner_uid=job["metadata"]["uid"]))
    await kube.delete(JOB, "job", namespace="ns", propagation_policy=policy)
    remaining = kube.objects(WORKLOAD)
    assert bool(remaining) is workload_survives
    if remaining:
        assert remaining[0]["metadata"]["ownerReferences"] == []


async def test_deleting_a_namespace_deletes_its_objects() -> None:
    kube = FakeKube()
    await kube.create(NAMESPACE, {"metadata": {"name": "ns"}})
    await kube.create(JOB, make_job())
    await kube.create(JOB, make_job(namespace="other"))
    await kube.delete(NAMESPACE, "ns")
    assert [j["metadata"]["namespace"] for j in kube.objects(JOB)] == ["other"]


async def test_list_filters_by_namespace_and_label_selector() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("a"))
    await kube.create(JOB, make_job("b", queue=None))
    await kube.create(JOB, make_job("c", namespace="other"))
    listed = await kube.list(JOB, label_selector="kueue.x-k8s.io/queue-name")
    assert sorted(j["metadata"]["name"] for j in listed.items) == ["a", "c"]
    assert listed.resource_version == kube.resource_version
    assert [j["metadata"]["name"] for j in (await kube.list(JOB, namespace="ns")).items] == ["a", "b"]


async def test_watch_delivers_changes_after_the_version() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("before"))
    start = kube.resource_version
    watching = asyncio.create_task(collect(kube, 3, resource=JOB, resource_version=start))
    await asyncio.sleep(0)
    await kube.create(JOB, make_job("a"))
    await kube.patch(JOB, "a", {"spec": {"parallelism": 2}}, namespace="ns")
    await kube.delete(JOB, "a", namespace="ns", propagation_policy="Background")
    events = await asyncio.wait_for(watching, 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]


async def test_watch_replays_history_since_an_older_version() -> None:
    kube = FakeKube()
    start = kube.resource_version
    await kube.create(JOB, make_job("a"))
    await kube.create(JOB, make_job("b"))
    events = await asyncio.wait_for(collect(kube, 2, resource=JOB, resource_version=start), 2)
    assert [e.object["metadata"]["name"] for e in events] == ["a", "b"]


async def test_watch_selector_turns_label_changes_into_added_and_deleted() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("a", queue=None))
    start = kube.resource_version
    await kube.patch(JOB, "a", {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}}, namespace="ns")
    await kube.patch(JOB, "a", {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": None}}}, namespace="ns")
    events = await asyncio.wait_for(
        collect(kube, 2, resource=JOB, resource_version=start, label_selector="kueue.x-k8s.io/queue-name"), 2
    )
    assert [e.type for e in events] == ["ADDED", "DELETED"]


async def test_watch_from_compacted_version_is_gone() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("a"))
    old = kube.resource_version  # not "0", which means "any version" and is never too old
    await kube.create(JOB, make_job("b"))
    kube.compact()
    with pytest.raises(errors.Gone):
        await collect(kube, 1, resource=JOB, resource_version=old)


async def test_history_limit_compacts_on_its_own() -> None:
    kube = FakeKube(history_limit=2)
    await kube.create(JOB, make_job("first"))
    old = kube.resource_version
    for name in "abc":
        await kube.create(JOB, make_job(name))
    with pytest.raises(errors.Gone):
        await collect(kube, 1, resource=JOB, resource_version=old)


async def test_watch_from_version_zero_starts_with_current_objects() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("a"))
    kube.compact()
    events = await asyncio.wait_for(collect(kube, 1, resource=JOB, resource_version="0"), 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "a")]


async def test_watch_ends_at_its_timeout() -> None:
    kube = FakeKube()
    events = await asyncio.wait_for(
        collect(kube, 1, resource=JOB, resource_version=kube.resource_version, timeout_seconds=0), 2
    )
    assert events == []


async def test_bookmarks_and_broken_watches() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("a"))

    seen: list[WatchEvent] = []

    async def watch_until_broken() -> None:
        async with contextlib.aclosing(kube.watch(JOB, resource_version=kube.resource_version)) as stream:
            async for event in stream:
                seen.append(event)
                kube.break_watches()

    task = asyncio.create_task(watch_until_broken())
    await asyncio.sleep(0)
    kube.bookmark()
    with pytest.raises(errors.Retryable):
        await asyncio.wait_for(task, 2)
    assert [e.type for e in seen] == ["BOOKMARK"]
    assert seen[0].object["metadata"]["resourceVersion"] == kube.resource_version


async def test_closing_a_watch_unregisters_it() -> None:
    kube = FakeKube()
    task = asyncio.create_task(collect(kube, 1, resource=JOB, resource_version=kube.resource_version))
    await asyncio.sleep(0)
    assert kube.break_watches(errors.Gone("gone")) == 1
    with pytest.raises(errors.Gone):
        await asyncio.wait_for(task, 2)
    assert kube.break_watches() == 0


async def test_injected_fault_fails_the_next_writes_of_a_kind() -> None:
    kube = FakeKube()
    fault = kube.faults.fail_next("create", resource=WORKLOAD, times=2)
    await kube.create(JOB, make_job())  # other kinds are untouched
    for _ in range(2):
        with pytest.raises(errors.Retryable):
            await kube.create(WORKLOAD, make_workload())
    await kube.create(WORKLOAD, make_workload())
    assert fault.remaining == 0
    assert fault.hits == 2


async def test_injected_conflict_on_status_write() -> None:
    kube = FakeKube()
    await kube.create(WORKLOAD, make_workload())
    kube.faults.fail_next("patch_status", error=errors.Conflict("injected", status=409))
    with pytest.raises(errors.Conflict):
        await kube.patch_status(WORKLOAD, "wl", {"status": {"admission": {}}}, namespace="ns")
    assert "status" not in await kube.get(WORKLOAD, "wl", namespace="ns")


async def test_fault_after_the_write_landed() -> None:
    # The ambiguous failure: the client times out, but the server did commit.
    kube = FakeKube()
    kube.faults.fail_next("create", applied=True)
    with pytest.raises(errors.Retryable):
        await kube.create(JOB, make_job())
    assert [j["metadata"]["name"] for j in kube.objects(JOB)] == ["job"]


async def test_actions_log_records_successful_writes_only() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job())
    with pytest.raises(errors.AlreadyExists):
        await kube.create(JOB, make_job())
    await kube.patch(JOB, "job", {"spec": {"parallelism": 5}}, namespace="ns")
    assert [a.verb for a in kube.actions] == ["create", "patch"]


async def test_returned_objects_are_copies() -> None:
    kube = FakeKube()
    job = await kube.create(JOB, make_job())
    job["spec"]["parallelism"] = 99
    assert (await kube.get(JOB, "job", namespace="ns"))["spec"]["parallelism"] == 1


async def test_custom_resources_refuse_unconditional_replace() -> None:
    kube = FakeKube()
    created = await kube.create(WORKLOAD, make_workload())
    del created["metadata"]["resourceVersion"]
    with pytest.raises(errors.Invalid):
        await kube.replace(WORKLOAD, created)
    job = await kube.create(JOB, make_job())
    del job["metadata"]["resourceVersion"]
    job["spec"]["parallelism"] = 4
    assert (await kube.replace(JOB, job))["spec"]["parallelism"] == 4, "built-in kinds allow it"
