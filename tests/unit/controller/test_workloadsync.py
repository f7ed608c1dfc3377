"""WorkloadSync on the fake API server: orphans deleted, evictions the core decides applied, bare Workloads released,
reactivated ones requeued. Each test reads the outcome back from the fake, not from the cache."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_admission, make_job
from webhook.api import conditions
from webhook.api.constants import API_VERSION, RESOURCE_IN_USE_FINALIZER
from webhook.api.views import BatchJob, WorkloadRecord
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.watches import build_cache
from webhook.controller.workloadsync import WorkloadSync
from webhook.jobs import batch_job
from webhook.jobs import workload as wl_life
from webhook.kube import resources as r
from webhook.kube.objects import Object

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NS = "team-a"


class World:
    """The fake API server, the reconciler's cache of it, and one WorkloadSync."""

    def __init__(self, *, garbage_collect: bool = True) -> None:
        self.kube = FakeKube(clock=lambda: T0, garbage_collect=garbage_collect)
        self.cache: ClusterCache = build_cache()
        self.sync = WorkloadSync(self.kube, self.cache, events=EventRecorder(self.kube))

    def refresh(self) -> None:
        for resource in (r.JOB, r.WORKLOAD, r.CLUSTER_QUEUE, r.LOCAL_QUEUE):
            self.cache.replace(resource, self.kube.objects(resource))

    async def run(self, now: datetime = T0) -> datetime | None:
        self.refresh()
        (workload,) = self.kube.objects(r.WORKLOAD)
        return await self.sync.sync(WorkloadRecord.of(workload), now)

    def workloads(self) -> list[Object]:
        return self.kube.objects(r.WORKLOAD)

    def workload(self) -> Object:
        (workload,) = self.kube.objects(r.WORKLOAD)
        return workload

    async def job_with_workload(self, *, admitted_at: datetime | None = T0, **spec: Any) -> tuple[Object, Object]:
        job = await self.kube.create(r.JOB, make_job("train"))
        workload = batch_job.workload_for(BatchJob.of(job), priority=0)
        workload["spec"] |= spec
        workload = await self.kube.create(r.WORKLOAD, workload)
        if admitted_at is not None:
            workload = await self.kube.replace_status(
                r.WORKLOAD,
                wl_life.admitted(WorkloadRecord.of(workload), make_admission(main={"cpu": "f"}), now=admitted_at),
            )
        return job, workload

    async def bare_workload(self, **status: Any) -> Object:
        body = {
            "apiVersion": API_VERSION,
            "kind": "Workload",
            "metadata": {"name": "bare", "namespace": NS},
            "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}]},
        }
        workload = await self.kube.create(r.WORKLOAD, body)
        return await self.kube.replace_status(
            r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(workload), make_admission(main={"cpu": "f"}), now=T0)
        )

    async def queue(self, resource: r.Resource, name: str, *, stop_policy: str, namespace: str | None = None) -> None:
        kind = "ClusterQueue" if resource == r.CLUSTER_QUEUE else "LocalQueue"
        meta: dict[str, Any] = {"name": name} | ({"namespace": namespace} if namespace else {})
        spec: dict[str, Any] = {"stopPolicy": stop_policy}
        if resource == r.LOCAL_QUEUE:
            spec["clusterQueue"] = "cq"
        await self.kube.create(resource, {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec})


def _condition(workload: Object, kind: str) -> Mapping[str, Any] | None:
    return conditions.find((workload.get("status") or {}).get("conditions"), kind)


async def test_the_workload_of_a_deleted_job_goes_once_its_finalizer_is_dropped() -> None:
    world = World()
    job, _ = await world.job_with_workload()
    await world.kube.delete(r.JOB, job["metadata"]["name"], namespace=NS, propagation_policy="Background")
    assert world.workload()["metadata"].get("deletionTimestamp")  # collected, held by its finalizer
    assert await world.run() is None
    assert world.workloads() == []


async def test_a_workload_whose_job_is_gone_is_deleted_as_an_orphan() -> None:
    world = World(garbage_collect=False)  # no garbage collector (or it has not come yet): the reconciler decides
    job, _ = await world.job_with_workload()
    await world.kube.delete(r.JOB, job["metadata"]["name"], namespace=NS)
    assert await world.run() is None
    assert world.workloads() == []


async def test_a_workload_whose_job_was_replaced_by_another_of_the_same_name_is_an_orphan() -> None:
    world = World(garbage_collect=False)
    job, workload = await world.job_with_workload()
    await world.kube.delete(r.JOB, job["metadata"]["name"], namespace=NS)
    replacement = await world.kube.create(r.JOB, make_job("train"))
    assert replacement["metadata"]["uid"] != job["metadata"]["uid"]
    world.cache.replace(r.JOB, [])  # the job cache holds only labelled Jobs: the server is asked
    await world.sync.sync(WorkloadRecord.of(workload), T0)
    assert world.workloads() == []
    assert [j["metadata"]["uid"] for j in world.kube.objects(r.JOB)] == [replacement["metadata"]["uid"]]


async def test_the_workload_of_a_job_that_exists_is_left_alone() -> None:
    world = World()
    await world.job_with_workload()
    assert await world.run() is None
    workload = world.workload()
    assert RESOURCE_IN_USE_FINALIZER in workload["metadata"]["finalizers"]
    assert WorkloadRecord.of(workload).holds_quota
    assert not WorkloadRecord.of(workload).evicted


async def test_a_finished_workload_of_a_gone_job_loses_its_finalizer_but_is_not_deleted() -> None:
    world = World(garbage_collect=False)
    job, workload = await world.job_with_workload()
    await world.kube.replace_status(
        r.WORKLOAD, wl_life.finished(WorkloadRecord.of(workload), succeeded=True, message="done", now=T0)
    )
    await world.kube.delete(r.JOB, job["metadata"]["name"], namespace=NS)
    assert await world.run() is None
    workload = world.workload()
    assert RESOURCE_IN_USE_FINALIZER not in (workload["metadata"].get("finalizers") or [])
    assert WorkloadRecord.of(workload).finished


async def test_a_deactivated_workload_is_evicted() -> None:
    world = World()
    await world.job_with_workload(active=False)
    assert await world.run() is None
    evicted = _condition(world.workload(), "Evicted")
    assert evicted is not None
    assert (evicted["status"], evicted["reason"]) == ("True", "Deactivated")


async def test_a_workload_past_its_maximum_execution_time_is_evicted_and_deactivated() -> None:
    world = World()
    await world.job_with_workload(maximumExecutionTimeSeconds=60)
    # Before the limit: nothing, and the loop is told when to look again.
    assert await world.run(T0 + timedelta(seconds=30)) == T0 + timedelta(seconds=60)
    assert not WorkloadRecord.of(world.workload()).evicted
    await world.run(T0 + timedelta(seconds=61))
    workload = world.workload()
    assert workload["spec"]["active"] is False
    evicted = _condition(workload, "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "DeactivatedDueToMaximumExecutionTimeExceeded"


async def test_a_cluster_queue_stopped_with_hold_and_drain_evicts_what_it_admitted() -> None:
    world = World()
    await world.queue(r.CLUSTER_QUEUE, "cq", stop_policy="HoldAndDrain")
    await world.job_with_workload()
    await world.run()
    evicted = _condition(world.workload(), "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "ClusterQueueStopped"


async def test_a_local_queue_stopped_with_hold_and_drain_evicts_what_it_submitted() -> None:
    world = World()
    await world.queue(r.LOCAL_QUEUE, "user-queue", stop_policy="HoldAndDrain", namespace=NS)
    await world.job_with_workload()
    await world.run()
    evicted = _condition(world.workload(), "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "LocalQueueStopped"


async def test_a_queue_stopped_with_hold_keeps_what_runs() -> None:
    world = World()
    await world.queue(r.CLUSTER_QUEUE, "cq", stop_policy="Hold")
    await world.job_with_workload()
    await world.run()
    assert not WorkloadRecord.of(world.workload()).evicted
    assert WorkloadRecord.of(world.workload()).holds_quota


async def test_an_evicted_bare_workload_gives_its_quota_back_at_once() -> None:
    world = World()
    workload = await world.bare_workload()
    await world.kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Deactivated", message="m", now=T0)
    )
    await world.run()
    workload = world.workload()
    assert not WorkloadRecord.of(workload).holds_quota
    assert world.workloads()[0]["metadata"]["name"] == "bare"  # not an orphan: it never had a job


async def test_an_evicted_workload_of_a_job_keeps_its_quota_until_the_job_stops() -> None:
    world = World()
    _, workload = await world.job_with_workload()
    await world.kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Deactivated", message="m", now=T0)
    )
    await world.run()
    assert WorkloadRecord.of(world.workload()).holds_quota  # JobSync releases it once the Job is suspended


async def test_a_reactivated_workload_is_requeued() -> None:
    world = World()
    _, workload = await world.job_with_workload(active=False)
    workload = await world.kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Deactivated", message="m", now=T0)
    )
    workload = await world.kube.replace_status(r.WORKLOAD, wl_life.released(WorkloadRecord.of(workload), now=T0))
    requeued = _condition(workload, "Requeued")
    assert requeued is not None
    assert requeued["status"] == "False"
    await world.kube.patch(r.WORKLOAD, workload["metadata"]["name"], {"spec": {"active": True}}, namespace=NS)
    await world.run(T0 + timedelta(seconds=5))
    requeued = _condition(world.workload(), "Requeued")
    assert requeued is not None
    assert (requeued["status"], requeued["reason"]) == ("True", "Reactivated")
