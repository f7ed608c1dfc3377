"""The reconciler's passes on the in-memory fake: work proportional to change, and a failing object's backoff.

The cache is fed from the fake's store before each pass (as the watches would); assertions read the fake.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.doubles.fakekube import FakeKube
from tests.unit.controller.test_admitter import SlowKube, make_cluster_queue, make_local_queue
from tests.unit.jobs.builders import make_flavor, make_job
from tests.unit.test_metrics import value
from webhook.api import constants
from webhook.api.views import ObjectView, WorkloadRecord
from webhook.controller.reconciler import Reconciler
from webhook.controller.watches import CACHE_WATCHES, build_cache
from webhook.jobs import batch_job, suspendable
from webhook.jobs import workload as wl_life
from webhook.kube import errors
from webhook.kube import resources as r
from webhook.kube.objects import Object
from webhook.metrics import Metrics

NOW = datetime(2025, 1, 1, tzinfo=UTC)
NS = "team-a"


def bare_workload(name: str, *, cpu: str = "1") -> dict[str, Any]:
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "queueName": "q",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


class World:
    def __init__(self, *, cpu: str = "2") -> None:
        self.now = NOW
        self.kube = FakeKube(clock=lambda: self.now)
        self.cache = build_cache()
        self.reconciler = Reconciler(self.kube, self.cache, clock=lambda: self.now)
        self.cpu = cpu

    async def queues(self) -> None:
        for resource, obj in (
            (r.NAMESPACE, {"metadata": {"name": NS}}),
            (r.RESOURCE_FLAVOR, make_flavor("default")),
            (r.CLUSTER_QUEUE, make_cluster_queue("cq", flavor="default", cpu=self.cpu)),
            (r.LOCAL_QUEUE, make_local_queue(NS, "q", "cq")),
        ):
            await self.kube.create(resource, obj)

    async def pass_once(self, *, after: float = 0.0) -> None:
        """One pass, ``after`` seconds later, on what the API server holds now."""
        self.now += timedelta(seconds=after)
        for spec in CACHE_WATCHES:
            self.cache.replace(spec.resource, self.kube.objects(spec.resource))
        await self.reconciler.pass_once()

    def workload(self, name: str) -> Object:
        return next(w for w in self.kube.objects(r.WORKLOAD) if w["metadata"]["name"] == name)

    def admitted(self) -> set[str]:
        return {w["metadata"]["name"] for w in self.kube.objects(r.WORKLOAD) if WorkloadRecord.of(w).holds_quota}

    async def finish(self, name: str) -> None:
        body = wl_life.finished(WorkloadRecord.of(self.workload(name)), succeeded=True, message="done", now=self.now)
        await self.kube.replace_status(r.WORKLOAD, body)


async def test_the_scheduler_runs_again_only_when_something_schedulable_changed() -> None:
    world = World(cpu="2")
    await world.queues()
    await world.kube.create(r.WORKLOAD, bare_workload("a"))
    await world.pass_once()
    assert world.admitted() == {"a"}
    schedules = world.reconciler.admitter.schedules

    await world.pass_once(after=0.1)
    await world.pass_once(after=0.1)
    assert world.reconciler.admitter.schedules == schedules, "the echo of our own admission decides nothing new"

    await world.kube.create(r.WORKLOAD, bare_workload("b"))
    await world.kube.create(r.WORKLOAD, bare_workload("c"))
    await world.pass_once(after=0.1)
    assert world.admitted() == {"a", "b"}, "c does not fit: 2 CPU"
    assert world.reconciler.admitter.schedules == schedules + 1
    await world.pass_once(after=0.1)  # c's pending reason was written: information only
    assert world.reconciler.admitter.schedules == schedules + 1

    await world.finish("a")
    await world.pass_once(after=0.1)
    assert world.admitted() == {"b", "c"}, "freed quota is scheduled at once"


async def test_a_job_whose_write_keeps_failing_is_retried_after_a_growing_backoff_not_at_every_pass() -> None:
    world = World()
    await world.queues()
    job = await world.kube.create(r.JOB, make_job("train", namespace=NS, queue="q"))
    name = suspendable.job_workload_name(ObjectView.of(job), batch_job.ADAPTER.kind)
    fault = world.kube.faults.fail_next("create", resource=r.WORKLOAD, name=name, times=2)

    await world.pass_once()
    assert fault.hits == 1
    await world.kube.create(r.WORKLOAD, bare_workload("unrelated"))  # another change: another pass
    await world.pass_once(after=0.01)
    await world.pass_once(after=0.01)
    assert fault.hits == 1, "a failed job waits for its backoff; other changes do not retry it"

    await world.pass_once(after=0.1)
    assert fault.hits == 2, "retried once its backoff is over"
    await world.pass_once(after=0.1)
    assert fault.hits == 2, "the second failure waits twice as long"
    await world.pass_once(after=0.15)
    owned = [w for w in world.kube.objects(r.WORKLOAD) if w["metadata"].get("ownerReferences")]
    assert len(owned) == 1, "the third attempt creates the Workload"


async def test_a_refused_admission_is_not_written_again_before_its_backoff() -> None:
    world = World(cpu="2")
    await world.queues()
    await world.kube.create(r.WORKLOAD, bare_workload("a"))
    refused = errors.Invalid("422 Invalid: rejected by a policy", status=422)
    fault = world.kube.faults.fail_next("replace_status", resource=r.WORKLOAD, name="a", error=refused, times=2)

    await world.pass_once()
    assert fault.hits == 1
    await world.kube.create(r.WORKLOAD, bare_workload("b"))  # something schedulable: the scheduler runs again
    await world.pass_once(after=0.1)
    assert world.admitted() == {"b"}, "b is admitted meanwhile"
    assert fault.hits == 1, "a waits for its backoff"

    await world.pass_once(after=0.5)
    assert fault.hits == 2, "its backoff over, the scheduler runs again by itself and a is written again"
    await world.pass_once(after=1.1)
    assert world.admitted() == {"a", "b"}


async def test_a_full_pass_syncs_every_workload_with_a_bounded_number_of_tasks() -> None:
    # A full pass over a deep backlog once started one task per Workload at once (50,000 tasks, ~47 MiB).
    world = World(cpu="2")
    world.reconciler = Reconciler(world.kube, world.cache, clock=lambda: world.now, concurrency=4)
    await world.queues()
    for i in range(200):
        await world.kube.create(r.WORKLOAD, bare_workload(f"w-{i}"))
    synced: list[str] = []
    tasks_seen: list[int] = []
    sync = world.reconciler.workloads.sync

    async def counting(wl: WorkloadRecord, now: datetime) -> Any:
        tasks_seen.append(len(asyncio.all_tasks()))
        await asyncio.sleep(0)  # as a sync that writes would: the others get their turn
        synced.append(wl.name)
        return await sync(wl, now)

    world.reconciler.workloads.sync = counting  # type: ignore[method-assign]  # observe the calls, keep the work
    await world.pass_once()
    assert sorted(synced) == sorted(f"w-{i}" for i in range(200))
    assert max(tasks_seen) <= 4 + 1, "4 workers and the test's own task"
    assert len(world.admitted()) == 2, "2 CPU: the pass goes on to schedule as before"


async def test_a_pass_reports_how_long_it_took_its_admission_writes_included() -> None:
    world = World()
    world.kube = SlowKube(0.25, clock=lambda: world.now)  # each Workload status write answered after 0.25 s
    metrics = Metrics()
    world.reconciler = Reconciler(world.kube, world.cache, clock=lambda: world.now, metrics=metrics)
    await world.queues()
    await world.kube.create(r.WORKLOAD, bare_workload("a"))
    await world.pass_once()
    assert world.admitted() == {"a"}
    assert value(metrics, "turnstile_reconciler_pass_duration_seconds_count") == 1
    assert value(metrics, "turnstile_reconciler_pass_duration_seconds_sum") >= 0.25, "it waited for the admission"
    await world.pass_once(after=0.1)  # the echo of our own admission: nothing to write
    assert value(metrics, "turnstile_reconciler_pass_duration_seconds_count") == 2
    assert value(metrics, "turnstile_reconciler_pass_duration_seconds_sum") < 0.45


async def test_a_pass_reports_the_share_of_their_rates_information_writes_keep() -> None:
    world = World()
    metrics = Metrics()
    world.reconciler = Reconciler(world.kube, world.cache, clock=lambda: world.now, metrics=metrics)
    await world.queues()
    await world.pass_once()
    assert value(metrics, "turnstile_information_write_share") == 1.0
    for seconds in (0.01, 0.5, 0.5):  # admissions answered in 10 ms lately, in half a second now
        world.reconciler.write_latency.observe(seconds)
    await world.pass_once(after=0.1)
    assert value(metrics, "turnstile_information_write_share") == 0.2
