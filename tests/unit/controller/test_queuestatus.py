"""QueueStatusWriter against the in-memory fake: what ``kubectl get cq,lq`` shows, and the queue metrics."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from tests.unit.core.builders import T0, admitted, cpu_queue, local_queue, snapshot, workload
from tests.unit.test_metrics import samples, value
from webhook.api import constants
from webhook.api.flavor import ResourceFlavor
from webhook.api.workload import Condition, Workload
from webhook.controller.cache import ClusterCache
from webhook.controller.queuestatus import QueueStatusWriter
from webhook.controller.watches import build_cache
from webhook.kube import resources as r
from webhook.metrics import Metrics

NOW = datetime(2026, 1, 1, 1, tzinfo=UTC)


def cq_object(name: str) -> dict[str, Any]:
    return {"apiVersion": constants.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {}}


def lq_object(namespace: str, name: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterQueue": cluster_queue},
    }


async def stored(kube: FakeKube, *objects: tuple[Any, dict[str, Any]]) -> ClusterCache:
    cache = build_cache()
    for resource, obj in objects:
        await kube.create(resource, obj)
    for resource in (r.CLUSTER_QUEUE, r.LOCAL_QUEUE):
        cache.replace(resource, kube.objects(resource))
    return cache


def status_of(kube: FakeKube, resource: Any, name: str) -> dict[str, Any]:
    (obj,) = [o for o in kube.objects(resource) if o["metadata"]["name"] == name]
    return dict(obj.get("status") or {})


def active_condition(status: dict[str, Any]) -> tuple[str, str]:
    (cond,) = [c for c in status["conditions"] if c["type"] == "Active"]
    return cond["status"], cond["reason"]


def finished(wl: Workload) -> Workload:
    done = Condition(constants.COND_FINISHED, "True", "Succeeded", "", T0)
    return dataclasses.replace(wl, conditions=(*wl.conditions, done))


async def test_usage_counts_and_borrowing_are_written_once() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, (r.CLUSTER_QUEUE, cq_object("cq")), (r.LOCAL_QUEUE, lq_object("team", "cq", "cq")))
    running = admitted(workload("big", cpu=5), "cq")
    waiting = workload("next", cpu=1, queue="cq")
    snap = snapshot([cpu_queue("cq", 4)], [running, waiting], local_queues=[local_queue("cq")])
    writer = QueueStatusWriter(kube, cache)

    await writer.write(snap, NOW)

    status = status_of(kube, r.CLUSTER_QUEUE, "cq")
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (1, 1, 1)
    usage = status["flavorsUsage"][0]["resources"][0]
    assert (usage["name"], usage["total"], usage["borrowed"]) == ("cpu", "5", "1")
    assert active_condition(status) == ("True", "Ready")
    lq = status_of(kube, r.LOCAL_QUEUE, "cq")
    # "next" waits in this LocalQueue; "big" was submitted through another one ("main") of the same ClusterQueue.
    assert (lq["pendingWorkloads"], lq["admittedWorkloads"]) == (1, 0)
    writes = len(kube.actions)

    await writer.write(snap, NOW)
    assert len(kube.actions) == writes, "a status that did not change is not written again"


@pytest.mark.parametrize(
    ("queue", "flavors", "expected"),
    [
        pytest.param(cpu_queue("cq", 4), None, ("True", "Ready"), id="ready"),
        pytest.param(cpu_queue("cq", 4), [ResourceFlavor("other")], ("False", "FlavorNotFound"), id="no-flavor"),
        pytest.param(cpu_queue("cq", 4, stop="Hold"), None, ("False", "Stopped"), id="stopped"),
    ],
)
async def test_a_cluster_queue_says_whether_it_can_admit(
    queue: Any, flavors: list[ResourceFlavor] | None, expected: tuple[str, str]
) -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, (r.CLUSTER_QUEUE, cq_object("cq")))
    await QueueStatusWriter(kube, cache).write(snapshot([queue], [], flavors=flavors, local_queues=[]), NOW)
    assert active_condition(status_of(kube, r.CLUSTER_QUEUE, "cq")) == expected


async def test_a_local_queue_of_a_missing_cluster_queue_is_inactive() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, (r.LOCAL_QUEUE, lq_object("team", "orphan", "nowhere")))
    snap = snapshot([], [], local_queues=[local_queue("nowhere", name="orphan")])
    await QueueStatusWriter(kube, cache).write(snap, NOW)
    assert active_condition(status_of(kube, r.LOCAL_QUEUE, "orphan")) == ("False", "ClusterQueueDoesNotExist")


async def test_finished_workloads_are_counted_once_and_not_those_finished_before_the_first_pass() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, (r.CLUSTER_QUEUE, cq_object("cq")))
    metrics = Metrics()
    writer = QueueStatusWriter(kube, cache, metrics=metrics)
    old = finished(admitted(workload("old"), "cq"))
    running = admitted(workload("running"), "cq")
    never_admitted = workload("never")

    await writer.write(snapshot([cpu_queue("cq", 4)], [old, running, never_admitted]), NOW)
    assert samples(metrics, "kueue_finished_workloads_total") == [], "finished before this replica led"

    done = [old, finished(running), finished(never_admitted)]
    await writer.write(snapshot([cpu_queue("cq", 4)], done), NOW)
    await writer.write(snapshot([cpu_queue("cq", 4)], done), NOW)
    assert value(metrics, "kueue_finished_workloads_total", cluster_queue="cq") == 1


async def test_a_deleted_cluster_queue_leaves_no_series() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, (r.CLUSTER_QUEUE, cq_object("a")), (r.CLUSTER_QUEUE, cq_object("b")))
    metrics = Metrics()
    writer = QueueStatusWriter(kube, cache, metrics=metrics)
    await writer.write(snapshot([cpu_queue("a", 4), cpu_queue("b", 4)], []), NOW)
    assert {s[0]["cluster_queue"] for s in samples(metrics, "kueue_cluster_queue_nominal_quota")} == {"a", "b"}

    await writer.write(snapshot([cpu_queue("a", 4)], []), NOW)
    for name in ("kueue_cluster_queue_nominal_quota", "kueue_pending_workloads", "kueue_cluster_queue_status"):
        assert {s[0]["cluster_queue"] for s in samples(metrics, name)} == {"a"}, name


async def test_with_an_interval_a_queue_is_written_at_most_once_per_interval_but_a_new_one_at_once() -> None:
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, (r.CLUSTER_QUEUE, cq_object("a")), (r.CLUSTER_QUEUE, cq_object("b")))
    writer = QueueStatusWriter(kube, cache, min_interval=3.0)
    one = admitted(workload("one", cpu=1), "a")
    two = admitted(workload("two", cpu=1), "a")

    await writer.write(snapshot([cpu_queue("a", 4)], [one]), NOW)
    assert status_of(kube, r.CLUSTER_QUEUE, "a")["admittedWorkloads"] == 1
    await writer.write(snapshot([cpu_queue("a", 4)], [one, two]), NOW + timedelta(seconds=1))
    assert status_of(kube, r.CLUSTER_QUEUE, "a")["admittedWorkloads"] == 1, "within the interval: not yet"
    assert writer.due() == NOW + timedelta(seconds=3)

    await writer.write(snapshot([cpu_queue("a", 4), cpu_queue("b", 4)], [one, two]), NOW + timedelta(seconds=2))
    assert status_of(kube, r.CLUSTER_QUEUE, "b")["admittedWorkloads"] == 0, "a new queue has its status at once"
    assert status_of(kube, r.CLUSTER_QUEUE, "a")["admittedWorkloads"] == 1, "the others keep to their interval"

    await writer.write(snapshot([cpu_queue("a", 4), cpu_queue("b", 4)], [one, two]), NOW + timedelta(seconds=3))
    assert status_of(kube, r.CLUSTER_QUEUE, "a")["admittedWorkloads"] == 2
    assert writer.due() is None


async def test_with_a_rate_a_large_batch_of_statuses_spaces_the_next_one_out() -> None:
    names = [f"q{i}" for i in range(6)]
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, *((r.CLUSTER_QUEUE, cq_object(n)) for n in names))
    writer = QueueStatusWriter(kube, cache, min_interval=1.0, max_rate=2.0)
    queues = [cpu_queue(n, 4) for n in names]
    one = [admitted(workload(f"one-{n}", cpu=1), n) for n in names]
    two = [admitted(workload(f"two-{n}", cpu=1), n) for n in names]

    await writer.write(snapshot(queues, one), NOW)  # six statuses at once: the next batch 6 / 2 = 3 s later
    assert {status_of(kube, r.CLUSTER_QUEUE, n)["admittedWorkloads"] for n in names} == {1}
    await writer.write(snapshot(queues, one + two), NOW + timedelta(seconds=2))
    assert {status_of(kube, r.CLUSTER_QUEUE, n)["admittedWorkloads"] for n in names} == {1}, "past the interval only"
    assert writer.due() == NOW + timedelta(seconds=3)

    await writer.write(snapshot(queues, one + two), NOW + timedelta(seconds=3))
    assert {status_of(kube, r.CLUSTER_QUEUE, n)["admittedWorkloads"] for n in names} == {2}, "every queue, none left"

    # A quiet moment: one queue changes, a small batch, and the minimum interval is back.
    three = admitted(workload("three", cpu=1), "q0")
    await writer.write(snapshot(queues, [*one, *two, three]), NOW + timedelta(seconds=6))
    assert status_of(kube, r.CLUSTER_QUEUE, "q0")["admittedWorkloads"] == 3
    four = admitted(workload("four", cpu=1), "q0")
    await writer.write(snapshot(queues, [*one, *two, three, four]), NOW + timedelta(seconds=7))
    assert status_of(kube, r.CLUSTER_QUEUE, "q0")["admittedWorkloads"] == 4, "one write: spaced by the interval"


async def test_a_smaller_share_of_the_rate_spaces_the_next_batch_further() -> None:
    names = [f"q{i}" for i in range(6)]
    kube = FakeKube(clock=lambda: NOW)
    cache = await stored(kube, *((r.CLUSTER_QUEUE, cq_object(n)) for n in names))
    share = [1.0]
    writer = QueueStatusWriter(kube, cache, min_interval=1.0, max_rate=2.0, share=lambda: share[0])
    queues = [cpu_queue(n, 4) for n in names]
    one = [admitted(workload(f"one-{n}", cpu=1), n) for n in names]
    two = [admitted(workload(f"two-{n}", cpu=1), n) for n in names]

    await writer.write(snapshot(queues, one), NOW)
    share[0] = 0.5  # the API server answers admissions slowly: half the rate, six statuses 6 s apart
    await writer.write(snapshot(queues, one + two), NOW + timedelta(seconds=3))
    assert {status_of(kube, r.CLUSTER_QUEUE, n)["admittedWorkloads"] for n in names} == {1}, "3 s is not enough"
    assert writer.due() == NOW + timedelta(seconds=6)
    await writer.write(snapshot(queues, one + two), NOW + timedelta(seconds=6))
    assert {status_of(kube, r.CLUSTER_QUEUE, n)["admittedWorkloads"] for n in names} == {2}
