"""The Admitter against the in-memory fake: what a pass writes for a workload that has to wait."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_flavor, make_job
from webhook.api import constants
from webhook.api.views import BatchJob
from webhook.controller.admitter import Admitter
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.ratelimit import TokenBucket, WriteLatency
from webhook.controller.watches import build_cache
from webhook.core.snapshot import Snapshot
from webhook.jobs import batch_job
from webhook.kube import resources as r
from webhook.kube.errors import Conflict, Retryable

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def make_cluster_queue(name: str, *, flavor: str, cpu: str) -> dict[str, Any]:
    group = {
        "coveredResources": ["cpu"],
        "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
    }
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", "resourceGroups": [group]},
    }


def make_local_queue(namespace: str, name: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterQueue": cluster_queue},
    }


async def create_queues(kube: FakeKube, *, cpu: str) -> None:
    """ResourceFlavor default, ClusterQueue cq with ``cpu`` of it, LocalQueue team-a/q pointing at cq."""
    for resource, obj in (
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.CLUSTER_QUEUE, make_cluster_queue("cq", flavor="default", cpu=cpu)),
        (r.LOCAL_QUEUE, make_local_queue("team-a", "q", "cq")),
    ):
        await kube.create(resource, obj)


async def four_pods_on_two_cpus() -> tuple[FakeKube, ClusterCache, dict[str, Any]]:
    """A Job of 4 one-CPU pods queued in a ClusterQueue of 2 CPU (it can never fit), its Workload, and the cache."""
    kube = FakeKube(clock=lambda: NOW)
    job = await kube.create(r.JOB, make_job("train", namespace="team-a", queue="q", parallelism=4))
    await create_queues(kube, cpu="2")
    await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0))
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE, r.WORKLOAD, r.JOB):
        cache.replace(resource, kube.objects(resource))
    return kube, cache, job


async def one_cpu_jobs(count: int, *, queue: str = "q", kube: FakeKube | None = None) -> tuple[FakeKube, ClusterCache]:
    """``count`` Jobs of one 1-CPU pod each (j0, j1, ...) queued in ``queue``, with their Workloads, beside a
    ClusterQueue of 1 CPU (LocalQueue team-a/q), and a cache of all of it (in ``kube``, or a new fake)."""
    kube = kube or FakeKube(clock=lambda: NOW)
    await create_queues(kube, cpu="1")
    for i in range(count):
        job = await kube.create(r.JOB, make_job(f"j{i}", namespace="team-a", queue=queue, parallelism=1))
        await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0))
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE, r.WORKLOAD, r.JOB):
        cache.replace(resource, kube.objects(resource))
    return kube, cache


async def finish(kube: FakeKube, cache: ClusterCache, name: str, *, at: str) -> None:
    """The Workload ``name`` finishes (Succeeded at ``at``), and the cache sees it."""
    done = next(w for w in kube.objects(r.WORKLOAD) if w["metadata"]["name"] == name)
    finished = {"type": constants.COND_FINISHED, "status": "True", "reason": "Succeeded", "message": ""}
    done["status"]["conditions"].append({**finished, "lastTransitionTime": at})
    await kube.replace_status(r.WORKLOAD, done)
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))


def reasons_told(kube: FakeKube) -> dict[str, str]:
    """Each Workload's QuotaReserved reason, by name (those with none left out)."""
    return {
        w["metadata"]["name"]: c["reason"]
        for w in kube.objects(r.WORKLOAD)
        for c in w.get("status", {}).get("conditions", [])
        if c["type"] == "QuotaReserved"
    }


def waiting_told(kube: FakeKube) -> int:
    """How many Workloads were told they wait for quota."""
    return sum(1 for reason in reasons_told(kube).values() if reason == constants.REASON_WAITING_FOR_QUOTA)


async def test_a_waiting_job_is_told_why_through_an_event_on_the_job() -> None:
    kube, cache, job = await four_pods_on_two_cpus()

    await Admitter(kube, cache, events=EventRecorder(kube)).run_pass(NOW)

    pending = {
        (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["involvedObject"].get("uid")): e["message"]
        for e in kube.objects(r.EVENT)
        if e["reason"] == "Pending"
    }
    on_job = pending[("Job", "train", job["metadata"]["uid"])]
    assert "cpu in flavor default needs 4" in on_job
    (stored,) = kube.objects(r.WORKLOAD)
    assert pending[("Workload", stored["metadata"]["name"], stored["metadata"]["uid"])] == on_job


async def test_a_waiting_reason_whose_numbers_moved_is_rewritten_at_most_once_per_refresh() -> None:
    kube, cache, _ = await four_pods_on_two_cpus()
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_refresh=timedelta(seconds=15))

    def message() -> str:
        (stored,) = kube.objects(r.WORKLOAD)
        return str(next(c["message"] for c in stored["status"]["conditions"] if c["type"] == "QuotaReserved"))

    async def grow_quota(cpu: str) -> None:
        (cq,) = kube.objects(r.CLUSTER_QUEUE)
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = cpu
        await kube.replace(r.CLUSTER_QUEUE, cq)
        cache.replace(r.CLUSTER_QUEUE, kube.objects(r.CLUSTER_QUEUE))

    await admitter.run_pass(NOW)
    assert "more than the 2 " in message()
    await grow_quota("3")
    await admitter.run_pass(NOW + timedelta(seconds=1))
    assert "more than the 2 " in message(), "same reason, new numbers, one second later: not worth a write"
    await admitter.run_pass(NOW + timedelta(seconds=16))
    assert "more than the 3 " in message(), "after the refresh interval the numbers are brought up to date"


async def test_a_waiting_reason_that_says_something_else_is_written_at_once_within_the_refresh() -> None:
    clock = [NOW]
    kube = FakeKube(clock=lambda: clock[0])
    await create_queues(kube, cpu="2")
    (cq,) = kube.objects(r.CLUSTER_QUEUE)
    cq["spec"]["queueingStrategy"] = "StrictFIFO"
    await kube.replace(r.CLUSTER_QUEUE, cq)
    for name, pods in (("hold", 2), ("big", 2), ("small", 1)):  # created a second apart: queue order is theirs
        job = await kube.create(r.JOB, make_job(name, namespace="team-a", queue="q", parallelism=pods))
        await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0))
        clock[0] += timedelta(seconds=1)
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE, r.WORKLOAD, r.JOB):
        cache.replace(resource, kube.objects(resource))
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_refresh=timedelta(seconds=15))

    def small_says() -> str:
        small = next(w for w in kube.objects(r.WORKLOAD) if w["metadata"]["name"].startswith("job-small"))
        return str(next(c["message"] for c in small["status"]["conditions"] if c["type"] == "QuotaReserved"))

    await admitter.run_pass(NOW)
    assert small_says().startswith("StrictFIFO: waiting behind team-a/job-big"), small_says()
    # The blocker goes; the small one is the head now, and waits for quota itself: the same reason code
    # (WaitingForQuota), other words. Told a second later, not after the refresh.
    big = next(w for w in kube.objects(r.WORKLOAD) if w["metadata"]["name"].startswith("job-big"))
    await kube.delete(r.WORKLOAD, big["metadata"]["name"], namespace="team-a")
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await admitter.run_pass(NOW + timedelta(seconds=1))
    assert not small_says().startswith("StrictFIFO"), small_says()
    assert "position 1 of 1" in small_says()


async def test_a_reason_someone_else_removed_is_written_again_on_the_next_pass() -> None:
    kube, cache, _ = await four_pods_on_two_cpus()

    def reasons() -> list[str]:
        (stored,) = kube.objects(r.WORKLOAD)
        return [c["reason"] for c in stored["status"].get("conditions", []) if c["type"] == "QuotaReserved"]

    async def change_flavors(name: str) -> None:  # scheduler input changes; the reason does not
        await kube.create(r.RESOURCE_FLAVOR, make_flavor(name))
        cache.replace(r.RESOURCE_FLAVOR, kube.objects(r.RESOURCE_FLAVOR))

    await Admitter(kube, cache, events=EventRecorder(kube)).run_pass(NOW)
    assert reasons() == [constants.REASON_EXCEEDS_MAX_QUOTA]  # 4 pods of 1 CPU, 2 CPU in the queue
    restarted = Admitter(kube, cache, events=EventRecorder(kube))
    await restarted.run_pass(NOW + timedelta(seconds=1))  # finds the reason shown: nothing to write
    (stored,) = kube.objects(r.WORKLOAD)
    stored["status"]["conditions"] = []
    cache.replace(r.WORKLOAD, [await kube.replace_status(r.WORKLOAD, stored)])
    await change_flavors("spare")

    await restarted.run_pass(NOW + timedelta(seconds=2))
    assert reasons() == [constants.REASON_EXCEEDS_MAX_QUOTA], "a new version of the Workload is compared again"


async def test_only_the_front_of_a_queue_is_told_why_until_it_moves_up() -> None:
    kube, cache = await one_cpu_jobs(4)  # one pod of 1 CPU each: one runs, three wait
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_positions=2)

    def told() -> dict[str, str]:
        return reasons_told(kube)

    await admitter.run_pass(NOW + timedelta(seconds=5))
    waits = constants.REASON_WAITING_FOR_QUOTA
    assert sorted(told().values()) == [constants.REASON_QUOTA_RESERVED, waits, waits], "the third waiting is not told"
    admitted = [n for n, reason in told().items() if reason == constants.REASON_QUOTA_RESERVED]

    (running,) = admitted
    await finish(kube, cache, running, at="2025-01-01T00:00:06Z")
    await admitter.run_pass(NOW + timedelta(seconds=6))
    now_told = told()
    del now_told[running]
    assert sorted(now_told.values()) == [constants.REASON_QUOTA_RESERVED, waits, waits], "the third moved up: told"


async def test_a_first_reason_waits_for_the_settle_and_one_admitted_sooner_never_gets_one() -> None:
    kube, cache = await one_cpu_jobs(3)  # one pod of 1 CPU each: one runs, two wait
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_settle=timedelta(seconds=2))

    def told() -> dict[str, str]:
        return reasons_told(kube)

    await admitter.run_pass(NOW)
    await admitter.drain()
    (running,) = told()
    assert told()[running] == constants.REASON_QUOTA_RESERVED, "the settle holds back reasons, never admissions"
    assert admitter.due() == NOW + timedelta(seconds=2), "the reconciler is woken when the settle ends"
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    # The running one finishes within the settle: the head is admitted without ever being told it waits.
    await finish(kube, cache, running, at="2025-01-01T00:00:01Z")
    await admitter.run_pass(NOW + timedelta(seconds=1))
    await admitter.drain()
    reasons = told()
    del reasons[running]
    assert list(reasons.values()) == [constants.REASON_QUOTA_RESERVED], "admitted before its settle ended: no reason"
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    await admitter.run_pass(NOW + timedelta(seconds=2))  # the last one has waited 2 s in the front: it is told
    await admitter.drain()
    assert sorted(told().values()) == sorted(
        [constants.REASON_QUOTA_RESERVED, constants.REASON_QUOTA_RESERVED, constants.REASON_WAITING_FOR_QUOTA]
    )


async def test_reasons_beyond_the_rate_are_owed_and_written_when_a_token_comes() -> None:
    kube, cache = await one_cpu_jobs(4)  # one runs, three wait
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_limit=TokenBucket(1.0, 1))
    await admitter.run_pass(NOW)
    await admitter.drain()
    assert waiting_told(kube) == 1, "one token: one reason"
    assert admitter.due() == NOW + timedelta(seconds=1), "the reconciler is woken when the next token comes"
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    await admitter.run_pass(NOW + timedelta(seconds=0.5))
    await admitter.drain()
    assert waiting_told(kube) == 1, "no token yet"
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    await admitter.run_pass(NOW + timedelta(seconds=1))
    await admitter.drain()
    assert waiting_told(kube) == 2, "the next one, a token later"
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))

    await admitter.run_pass(NOW + timedelta(seconds=2))
    await admitter.drain()
    assert waiting_told(kube) == 3
    assert admitter.due() is None, "nothing owed"


async def test_a_pass_that_could_write_no_reason_explains_none_and_the_next_token_schedules_again() -> None:
    kube, cache = await one_cpu_jobs(3)  # one runs, two wait
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_limit=TokenBucket(1.0, 1))
    _, first = await admitter.run_pass(NOW)
    await admitter.drain()
    assert [p.position for p in first.pending] == [1, 2], "a token: the front is explained"
    assert len(reasons_told(kube)) == 2, "the running one's reservation and one reason"

    # Another Workload arrives before the next token: the pass schedules (something changed) but explains nothing.
    job = await kube.create(r.JOB, make_job("j3", namespace="team-a", queue="q", parallelism=1))
    await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0))
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    schedules = admitter.schedules
    _, second = await admitter.run_pass(NOW + timedelta(seconds=0.5))
    await admitter.drain()
    assert admitter.schedules == schedules + 1
    assert second.pending == (), "no reason could be written: none was worked out"
    assert len(reasons_told(kube)) == 2
    assert admitter.due() == NOW + timedelta(seconds=1), "woken when the next token comes"

    # The token: nothing else changed, yet the pass schedules again, to explain, and writes the next reason.
    _, third = await admitter.run_pass(NOW + timedelta(seconds=1))
    await admitter.drain()
    assert admitter.schedules == schedules + 2
    assert [p.position for p in third.pending] == [1, 2, 3]
    assert len(reasons_told(kube)) == 3
    # Explained now: with nothing changed, the pass after it does not schedule.
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    await admitter.run_pass(NOW + timedelta(seconds=1.1))
    await admitter.drain()
    assert admitter.schedules == schedules + 2


async def test_a_workload_that_cannot_queue_is_told_at_once_despite_the_settle() -> None:
    kube, cache = await one_cpu_jobs(1, queue="no-such-queue")
    admitter = Admitter(kube, cache, events=EventRecorder(kube), pending_settle=timedelta(seconds=2))

    await admitter.run_pass(NOW)
    await admitter.drain()

    (stored,) = kube.objects(r.WORKLOAD)
    (reserved,) = [c for c in stored["status"]["conditions"] if c["type"] == "QuotaReserved"]
    assert reserved["status"] == "False"
    assert "no-such-queue" in reserved["message"]


async def test_a_queue_is_parsed_again_only_when_its_version_changes() -> None:
    kube = FakeKube(clock=lambda: NOW)
    await create_queues(kube, cpu="2")
    cache = build_cache()
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE):
        cache.replace(resource, kube.objects(resource))
    admitter = Admitter(kube, cache, events=EventRecorder(kube))

    first, again = admitter.snapshot(), admitter.snapshot()
    assert again.cluster_queues[0] is first.cluster_queues[0]  # the same version: not parsed again
    assert again.local_queues[0] is first.local_queues[0]

    (cq,) = kube.objects(r.CLUSTER_QUEUE)
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "5"
    cache.replace(r.CLUSTER_QUEUE, [await kube.replace(r.CLUSTER_QUEUE, cq)])
    changed = admitter.snapshot()
    assert changed.cluster_queues[0] is not first.cluster_queues[0]
    assert changed.cluster_queues[0] != first.cluster_queues[0]  # the new quota is what the scheduler sees

    cache.replace(r.CLUSTER_QUEUE, [])
    assert admitter.snapshot().cluster_queues == []  # a deleted queue is gone from the snapshot


class Queue:
    """One ClusterQueue of ``cpu`` with its LocalQueue ``q`` in team-a, on the fake, and an Admitter over a cache
    of it (refreshed from the fake before each pass, as the watches would)."""

    def __init__(self, *, cpu: str = "2", preemption: dict[str, str] | None = None, **admitter: Any) -> None:
        self.kube = FakeKube(clock=lambda: NOW)
        self.cache = build_cache()
        self.admitter = Admitter(self.kube, self.cache, events=EventRecorder(self.kube), **admitter)
        self._cpu, self._preemption = cpu, preemption

    async def start(self) -> Queue:
        cq = make_cluster_queue("cq", flavor="default", cpu=self._cpu)
        if self._preemption:
            cq["spec"]["preemption"] = self._preemption
        for resource, obj in (
            (r.RESOURCE_FLAVOR, make_flavor("default")),
            (r.CLUSTER_QUEUE, cq),
            (r.LOCAL_QUEUE, make_local_queue("team-a", "q", "cq")),
        ):
            await self.kube.create(resource, obj)
        return self

    async def submit(self, name: str, *, pods: int = 2, priority: int = 0) -> tuple[str, str]:
        job = await self.kube.create(r.JOB, make_job(name, namespace="team-a", queue="q", parallelism=pods))
        workload = await self.kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=priority))
        return ("team-a", workload["metadata"]["name"])

    def refresh(self) -> None:
        for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE, r.WORKLOAD, r.JOB):
            self.cache.replace(resource, self.kube.objects(resource))

    async def run_pass(self, at: datetime = NOW) -> None:
        self.refresh()
        await self.admitter.run_pass(at)

    def stored(self, key: tuple[str, str]) -> dict[str, Any]:
        return next(w for w in self.kube.objects(r.WORKLOAD) if w["metadata"]["name"] == key[1])

    def condition(self, key: tuple[str, str], kind: str) -> dict[str, Any] | None:
        conds = self.stored(key).get("status", {}).get("conditions") or []
        return next((c for c in conds if c["type"] == kind), None)

    def admitted(self, key: tuple[str, str]) -> bool:
        reserved = self.condition(key, "QuotaReserved")
        return reserved is not None and reserved["status"] == "True" and "admission" in self.stored(key)["status"]


async def test_an_admission_refused_with_a_conflict_frees_its_quota_and_is_decided_again() -> None:
    queue = await Queue().start()
    key = await queue.submit("train")
    queue.kube.faults.fail_next("replace_status", resource=r.WORKLOAD, error=Conflict("changed", status=409))
    await queue.run_pass()
    assert not queue.admitted(key)
    assert key not in queue.admitter.reservations  # nothing was stored: the quota is not held
    assert queue.cache.wakes >= 1  # the next pass is not left to the resync
    await queue.run_pass(NOW + timedelta(seconds=1))
    assert queue.admitted(key)


async def test_an_admission_of_unknown_outcome_holds_its_quota_until_the_cache_shows_the_workload_again() -> None:
    queue = await Queue().start()
    first = await queue.submit("first")
    # The write is applied, but its answer is lost (a timeout after the server stored it).
    timeout = Retryable("timeout", status=504)
    queue.kube.faults.fail_next("replace_status", resource=r.WORKLOAD, error=timeout, applied=True)
    await queue.run_pass()
    assert first in queue.admitter.reservations
    assert queue.admitted(first)  # on the server; the cache still shows it pending
    # A second Workload for the same quota, while the cache has not seen the first one's write: the assumption
    # keeps the quota held and the first is not written again.
    second = await queue.submit("second")
    queue.cache.observe(r.WORKLOAD, queue.stored(second))
    writes = len(queue.kube.actions)
    await queue.admitter.run_pass(NOW + timedelta(seconds=1))
    assert not queue.admitted(second)
    assert [a.key.name for a in queue.kube.actions[writes:] if a.verb == "replace_status"] == [second[1]]  # a reason
    # Once the cache shows a newer version of the first, what the server has decides: the first holds the quota.
    await queue.run_pass(NOW + timedelta(seconds=2))
    assert first not in queue.admitter.reservations
    assert queue.admitted(first)
    assert not queue.admitted(second)


async def test_a_higher_priority_workload_preempts_a_lower_one_of_its_queue() -> None:
    queue = await Queue(preemption={"withinClusterQueue": "LowerPriority"}).start()
    low = await queue.submit("low", priority=0)
    await queue.run_pass()
    assert queue.admitted(low)
    high = await queue.submit("high", priority=10)
    await queue.run_pass(NOW + timedelta(seconds=1))
    evicted = queue.condition(low, "Evicted")
    assert evicted is not None
    assert (evicted["status"], evicted["reason"]) == ("True", constants.EVICTED_BY_PREEMPTION)
    assert not queue.admitted(high)  # admitted in a later pass, once the victim's quota is given back
    assert any(e["reason"] == "Preempted" for e in queue.kube.objects(r.EVENT))
    # Evicting twice would only reset its clock: a second pass writes nothing new for the victim.
    version = queue.stored(low)["metadata"]["resourceVersion"]
    await queue.run_pass(NOW + timedelta(seconds=2))
    assert queue.stored(low)["metadata"]["resourceVersion"] == version


async def test_a_malformed_workload_is_left_out_and_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    queue = await Queue().start()
    key = await queue.submit("train")
    stored = queue.stored(key)
    stored["spec"]["podSets"] = "many"
    queue.cache.replace(r.WORKLOAD, [stored])
    with caplog.at_level(logging.WARNING, logger="webhook.controller.admitter"):
        assert queue.admitter.snapshot().workloads == []
        assert queue.admitter.snapshot().workloads == []
    assert len([r for r in caplog.records if "malformed Workload" in r.getMessage()]) == 1


async def test_a_workload_being_deleted_is_not_admitted() -> None:
    queue = await Queue().start()
    key = await queue.submit("train")
    for resource in (r.RESOURCE_FLAVOR, r.CLUSTER_QUEUE, r.LOCAL_QUEUE):
        queue.cache.replace(resource, queue.kube.objects(resource))
    deleting = queue.stored(key)
    deleting["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    queue.cache.replace(r.WORKLOAD, [deleting])
    await queue.admitter.run_pass(NOW)
    assert not queue.admitted(key)


async def test_deferred_pending_reasons_are_written_in_the_background_and_drained() -> None:
    queue = await Queue(cpu="1", deferred=True).start()
    key = await queue.submit("train", pods=2)
    await queue.run_pass()
    await queue.admitter.drain()
    reserved = queue.condition(key, "QuotaReserved")
    assert reserved is not None
    assert reserved["status"] == "False"
    assert [e["involvedObject"]["kind"] for e in queue.kube.objects(r.EVENT) if e["reason"] == "Pending"] == [
        "Workload",
        "Job",
    ]
    queue.admitter.cancel()  # nothing left to cancel: a no-op


class AnsweredLate(FakeKube):
    """Applies a pending-reason write (QuotaReserved False) at once but answers it only once ``answer`` is set: the
    server has it, our cache does not yet. Counts the conflicts it raises."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.applied = asyncio.Event()
        self.answer = asyncio.Event()
        self.conflicts = 0

    async def replace_status(self, resource: r.Resource, body: Any, **kwargs: Any) -> Any:
        try:
            written = await super().replace_status(resource, body, **kwargs)
        except Conflict:
            self.conflicts += 1
            raise
        conditions = written.get("status", {}).get("conditions") or []
        if any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions):
            self.applied.set()
            await self.answer.wait()
        return written


async def test_an_admission_decided_while_its_own_reason_is_in_flight_builds_on_that_write() -> None:
    queue = Queue(cpu="1")
    kube = queue.kube = AnsweredLate(clock=lambda: NOW)
    queue.admitter = Admitter(kube, queue.cache, events=EventRecorder(kube), deferred=True)
    await queue.start()
    keys = [await queue.submit("first", pods=1), await queue.submit("second", pods=1)]
    await queue.run_pass()
    running, waiting = sorted(keys, key=lambda key: not queue.admitted(key))
    assert queue.admitted(running)
    assert not queue.admitted(waiting)
    await asyncio.wait_for(kube.applied.wait(), 5)  # the waiting one's reason is stored; its answer is on its way
    # The running one finishes and the cache sees that, but not yet the reason written for the waiting one.
    finished = queue.stored(running)
    finished["status"]["conditions"].append(
        {
            "type": constants.COND_FINISHED,
            "status": "True",
            "reason": "Succeeded",
            "message": "",
            "lastTransitionTime": "2025-01-01T00:00:01Z",
        }
    )
    queue.cache.observe(r.WORKLOAD, await kube.replace_status(r.WORKLOAD, finished))

    admitting = asyncio.ensure_future(queue.admitter.run_pass(NOW + timedelta(seconds=1)))
    for _ in range(20):
        await asyncio.sleep(0)  # the pass admits the waiting one, on the version from before its reason
    kube.answer.set()
    await admitting
    await queue.admitter.drain()

    assert queue.admitted(waiting)
    assert kube.conflicts == 0  # built on the reason's version: no conflict with our own write


async def test_deferred_reasons_decided_while_others_are_being_written_are_owed_then_written() -> None:
    queue = Queue(cpu="1")
    kube = queue.kube = AnsweredLate(clock=lambda: NOW)
    queue.admitter = Admitter(kube, queue.cache, events=EventRecorder(kube), deferred=True)
    await queue.start()
    first = await queue.submit("first", pods=2)  # never fits in 1 CPU
    await queue.run_pass()
    await asyncio.wait_for(kube.applied.wait(), 5)  # its reason is being written, the answer held back

    second = await queue.submit("second", pods=2)
    await queue.run_pass(NOW + timedelta(seconds=1))  # a new Workload: scheduled again, its reason decided
    for _ in range(20):
        await asyncio.sleep(0)
    assert queue.condition(second, "QuotaReserved") is None  # owed: not written beside the ones in flight

    kube.answer.set()
    await queue.admitter.drain()
    await queue.run_pass(NOW + timedelta(seconds=2))  # nothing changed: the owed reasons are caught up
    await queue.admitter.drain()
    for key in (first, second):
        reserved = queue.condition(key, "QuotaReserved")
        assert reserved is not None
        assert reserved["status"] == "False"


def _backlog_in_step(admitter: Admitter, snapshot: Snapshot) -> None:
    """The backlog kept from pass to pass holds exactly the snapshot's pending Workloads, as the same objects."""
    kept = {wl.key: wl for wl in admitter.backlog.workloads()}
    pending = {wl.key: wl for wl in snapshot.workloads if wl.pending}
    assert kept.keys() == pending.keys()
    assert all(kept[key] is pending[key] for key in kept)


async def test_the_backlog_follows_every_change_the_snapshot_shows() -> None:
    queue = await Queue(cpu="2", preemption={"withinClusterQueue": "LowerPriority"}).start()

    async def run(at: datetime) -> None:
        queue.refresh()
        snapshot, _ = await queue.admitter.run_pass(at)
        _backlog_in_step(queue.admitter, snapshot)

    keys = [await queue.submit(f"j{i}", pods=1) for i in range(4)]
    await run(NOW)  # two admitted (assumed, then written), two wait
    running = [k for k in keys if queue.admitted(k)]
    waiting = [k for k in keys if k not in running]
    assert len(running) == 2
    await run(NOW + timedelta(seconds=1))  # the writes seen: the assumptions settle
    await finish(queue.kube, queue.cache, running[0][1], at="2025-01-01T00:00:02Z")
    queue.kube.faults.fail_next("replace_status", resource=r.WORKLOAD, error=Conflict("changed", status=409))
    await run(NOW + timedelta(seconds=2))  # the freed quota's admission is refused: pending again
    assert not any(queue.admitted(k) for k in waiting)
    await run(NOW + timedelta(seconds=3))
    (admitted,) = [k for k in waiting if queue.admitted(k)]
    (left,) = [k for k in waiting if k != admitted]
    await queue.kube.delete(r.WORKLOAD, left[1], namespace=left[0])
    urgent = await queue.submit("urgent", pods=1, priority=10)
    await run(NOW + timedelta(seconds=4))  # one gone, one preempting
    assert not queue.admitted(urgent)
    assert [wl.key for wl in queue.admitter.backlog.workloads()] == [urgent]


class SlowKube(FakeKube):
    """An API server that takes ``delay`` seconds to answer a Workload's status write."""

    def __init__(self, delay: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delay = delay

    async def replace_status(self, resource: r.Resource, body: Any, **kwargs: Any) -> Any:
        if resource == r.WORKLOAD:
            await asyncio.sleep(self.delay)
        return await super().replace_status(resource, body, **kwargs)


async def test_slow_admission_writes_slow_the_pending_reasons_down() -> None:
    slow, cache = await one_cpu_jobs(3, kube=SlowKube(0.25, clock=lambda: NOW))  # one runs, two wait
    latency = WriteLatency(least=0.25)
    latency.observe(0.01)  # the API server answered in 10 ms lately
    limit = TokenBucket(1.0, 1, share=latency.share)
    admitter = Admitter(slow, cache, events=EventRecorder(slow), pending_limit=limit, latency=latency)
    await admitter.run_pass(NOW)
    await admitter.drain()
    assert waiting_told(slow) == 1, "one token: one reason"
    assert latency.share() == 0.25, "the admission took 0.25 s, far slower than lately: a quarter of the rates"
    cache.replace(r.WORKLOAD, slow.objects(r.WORKLOAD))

    await admitter.run_pass(NOW + timedelta(seconds=1))
    await admitter.drain()
    assert waiting_told(slow) == 1, "a second later a quarter of a token came, not one"
    assert admitter.due() == NOW + timedelta(seconds=4), "the next token, at a quarter of the rate"
    cache.replace(r.WORKLOAD, slow.objects(r.WORKLOAD))

    await admitter.run_pass(NOW + timedelta(seconds=4))
    await admitter.drain()
    assert waiting_told(slow) == 2
