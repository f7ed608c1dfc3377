"""The informer against the fake API server: list, watch, bookmarks, re-list on Gone, reconnects."""

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from webhook.controller.backoff import Backoff
from webhook.controller.cache import ClusterCache
from webhook.controller.informer import ChangeType, Informer, WatchSpec
from webhook.controller.supervisor import Supervisor, TaskCrashed
from webhook.kube import errors
from webhook.kube.objects import Object
from webhook.kube.resources import JOB, Resource

QUEUE = "kueue.x-k8s.io/queue-name"


def make_job(name: str, *, queue: str | None = "q", namespace: str = "ns") -> Object:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE: queue} if queue else {}},
        "spec": {"suspend": True},
    }


def fast_backoff() -> Backoff:
    return Backoff(initial=0.001, cap=0.01)


async def eventually(check: Callable[[], bool]) -> None:
    """Wait (at most 2 s) until ``check`` holds; the informer runs concurrently."""
    async with asyncio.timeout(2):
        while not check():  # noqa: ASYNC110 - polling a test condition over several objects
            await asyncio.sleep(0.001)


def names(cache: ClusterCache) -> list[str]:
    return sorted(j["metadata"]["name"] for j in cache.jobs())


@pytest.fixture
async def running() -> AsyncIterator[tuple[FakeKube, ClusterCache, Informer]]:
    kube = FakeKube()
    cache = ClusterCache([JOB])
    informer = Informer(kube, WatchSpec(JOB), cache, backoff=fast_backoff())
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:jobs")
        yield kube, cache, informer


async def test_lists_then_follows_changes(running: tuple[FakeKube, ClusterCache, Informer]) -> None:
    kube, cache, informer = running
    await asyncio.wait_for(informer.wait_synced(), 2)
    assert informer.synced
    assert cache.synced()
    await kube.create(JOB, make_job("a"))
    await kube.create(JOB, make_job("b"))
    await eventually(lambda: names(cache) == ["a", "b"])
    await kube.delete(JOB, "a", namespace="ns")
    await eventually(lambda: names(cache) == ["b"])
    assert informer.lists == 1
    assert informer.resource_version == kube.resource_version


async def test_synced_waits_for_the_first_successful_list() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("a"))
    kube.faults.fail_next("list", times=3)
    cache = ClusterCache([JOB])
    informer = Informer(kube, WatchSpec(JOB), cache, backoff=fast_backoff())
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:jobs")
        await asyncio.wait_for(informer.wait_synced(), 2)
    assert informer.failures == 3
    assert names(cache) == ["a"]


async def test_a_list_hands_the_sink_what_each_made_of_every_item() -> None:
    kube = FakeKube()
    await kube.create(JOB, make_job("a"))
    await kube.create(JOB, make_job("b"))
    cache = ClusterCache([JOB])
    taken: list[str] = []

    def each(obj: Object) -> Object:
        taken.append(obj["metadata"]["name"])
        return cache.stored_form(obj) | {"kind": "Taken"}

    informer = Informer(kube, WatchSpec(JOB), cache, backoff=fast_backoff(), each=each)
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:jobs")
        await asyncio.wait_for(informer.wait_synced(), 2)
    assert sorted(taken) == ["a", "b"]
    assert [j["kind"] for j in cache.jobs()] == ["Taken", "Taken"]


async def test_bookmarks_advance_the_version_without_changes(
    running: tuple[FakeKube, ClusterCache, Informer],
) -> None:
    kube, cache, informer = running
    await asyncio.wait_for(informer.wait_synced(), 2)
    await kube.create(JOB, make_job("a", queue=None), namespace="ns")
    await eventually(lambda: names(cache) == ["a"])
    before = cache.generation
    # Another kind moves the global version on; only a bookmark tells the jobs watch about it.
    await kube.create(
        Resource("", "v1", "configmaps", "ConfigMap", namespaced=True), {"metadata": {"name": "c", "namespace": "ns"}}
    )
    await asyncio.sleep(0.01)  # let the informer settle on its watch before the bookmark goes out
    kube.bookmark()
    await eventually(lambda: informer.resource_version == kube.resource_version)
    assert cache.generation == before


async def test_a_dropped_watch_resumes_from_the_last_version_without_relisting(
    running: tuple[FakeKube, ClusterCache, Informer],
) -> None:
    kube, cache, informer = running
    await asyncio.wait_for(informer.wait_synced(), 2)
    await kube.create(JOB, make_job("a"))
    await eventually(lambda: names(cache) == ["a"])
    kube.faults.fail_next("watch", times=2)  # the reconnects fail too, for a while
    assert kube.break_watches() == 1
    await kube.create(JOB, make_job("b"))  # happens while disconnected
    await eventually(lambda: names(cache) == ["a", "b"])
    assert informer.lists == 1, "the watch history covered the gap: no re-list"
    assert informer.failures >= 3


async def test_gone_relists_and_drops_what_vanished_meanwhile(
    running: tuple[FakeKube, ClusterCache, Informer],
) -> None:
    kube, cache, informer = running
    await asyncio.wait_for(informer.wait_synced(), 2)
    await kube.create(JOB, make_job("a"))
    await kube.create(JOB, make_job("b"))
    await eventually(lambda: names(cache) == ["a", "b"])
    # The watch breaks, then while we are away "a" is deleted and "c" created and etcd compacts.
    kube.faults.fail_next("watch", times=1)
    kube.break_watches()
    await kube.delete(JOB, "a", namespace="ns")
    await kube.create(JOB, make_job("c"))
    kube.compact()
    await eventually(lambda: informer.lists == 2)
    await eventually(lambda: names(cache) == ["b", "c"])
    # And the new watch follows on from the re-list.
    await kube.delete(JOB, "b", namespace="ns")
    await eventually(lambda: names(cache) == ["c"])


async def test_gone_as_a_watch_error_event_relists(running: tuple[FakeKube, ClusterCache, Informer]) -> None:
    # What the real server does when the watch cache moved past our version: an ERROR event with code 410.
    kube, cache, informer = running
    await asyncio.wait_for(informer.wait_synced(), 2)
    kube.break_watches(errors.Gone("410 Expired: too old resource version", status=410, reason="Expired"))
    await eventually(lambda: informer.lists == 2)
    await kube.create(JOB, make_job("after"))
    await eventually(lambda: names(cache) == ["after"])


async def test_label_selector_limits_what_is_cached() -> None:
    kube = FakeKube()
    cache = ClusterCache([JOB])
    informer = Informer(kube, WatchSpec(JOB, label_selector=QUEUE), cache, backoff=fast_backoff())
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:jobs")
        await asyncio.wait_for(informer.wait_synced(), 2)
        await kube.create(JOB, make_job("plain", queue=None))
        await kube.create(JOB, make_job("queued"))
        await eventually(lambda: names(cache) == ["queued"])
        # Losing the label looks like a deletion to a filtered watch.
        await kube.patch(JOB, "queued", {"metadata": {"labels": {QUEUE: None}}}, namespace="ns")
        await eventually(lambda: names(cache) == [])


async def test_a_bug_in_the_sink_crashes_loudly() -> None:
    class BrokenSink:
        def replace(self, resource: Resource, objects: list[Object]) -> None:
            pass

        def apply(self, resource: Resource, change: ChangeType, obj: Object) -> None:
            raise KeyError("bug")

    kube = FakeKube()
    informer = Informer(kube, WatchSpec(JOB), BrokenSink(), backoff=fast_backoff())
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:jobs")
        await asyncio.wait_for(informer.wait_synced(), 2)
        await kube.create(JOB, make_job("a"))
        with pytest.raises(TaskCrashed) as caught:
            await asyncio.wait_for(tasks.wait(), 2)
    assert caught.value.task_name == "watch:jobs"


async def test_watches_ask_for_bookmarks_and_a_spread_timeout() -> None:
    seen: list[dict[str, Any]] = []

    class Recording(FakeKube):
        def watch(self, resource: Resource, **kwargs: Any) -> Any:
            seen.append(kwargs)
            return super().watch(resource, **kwargs)

    kube = Recording()
    informer = Informer(kube, WatchSpec(JOB), ClusterCache([JOB]), watch_timeout=(300, 600))
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:jobs")
        await eventually(lambda: bool(seen))
    assert seen[0]["allow_bookmarks"] is True
    assert 300 <= seen[0]["timeout_seconds"] <= 600
    assert seen[0]["resource_version"] == informer.resource_version


async def test_the_garbage_collector_is_off_while_a_list_is_stored_and_back_on_after_even_when_it_fails() -> None:
    import gc

    seen: list[bool] = []

    class Sink(ClusterCache):
        def replace(self, resource: Resource, objects: list[Object]) -> None:
            seen.append(gc.isenabled())
            super().replace(resource, objects)

    class Failing(FakeKube):
        fail = True

        async def list(self, resource: Resource, **kwargs: Any) -> Any:
            seen.append(gc.isenabled())
            if self.fail:
                self.fail = False
                raise errors.Retryable("the list broke")
            return await super().list(resource, **kwargs)

    kube = Failing()
    await kube.create(JOB, make_job("a"))
    informer = Informer(kube, WatchSpec(JOB), Sink([JOB]), backoff=fast_backoff())
    assert gc.isenabled()
    async with Supervisor() as tasks:
        tasks.spawn(informer.run(), name="watch:jobs")
        await informer.wait_synced()
        assert gc.isenabled(), "on again once the list is stored"
    assert seen == [False, False, False], "off in the failed list, the one after, and while it is stored"
    assert gc.isenabled()
