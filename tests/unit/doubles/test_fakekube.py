"""What only the fake has: its test controls (faults, compaction, bookmarks, broken watches, the actions log).

Where it must behave like the API server, ``tests/contract/test_kube_contract.py`` runs the same cases against both.
"""

import asyncio
import contextlib
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object, WatchEvent
from webhook.kube.resources import JOB, WORKLOAD


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
