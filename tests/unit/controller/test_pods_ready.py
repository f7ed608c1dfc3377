"""waitForPodsReady: an admitted Workload whose pods are not ready in time is evicted and requeued with backoff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_admission, make_job
from webhook.api import conditions
from webhook.api.configuration import RequeuingStrategy, WaitForPodsReady
from webhook.api.views import BatchJob, WorkloadRecord
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.watches import build_cache
from webhook.controller.workloadsync import WorkloadSync
from webhook.jobs import batch_job
from webhook.jobs import workload as wl_life
from webhook.kube import resources as r
from webhook.kube.objects import Object

T0 = datetime(2025, 1, 1, tzinfo=UTC)
CACHES: dict[int, ClusterCache] = {}


def _workload_sync(kube: FakeKube, policy: WaitForPodsReady | None) -> WorkloadSync:
    cache = build_cache()
    sync = WorkloadSync(kube, cache, events=EventRecorder(kube), wait_for_pods_ready=policy)
    CACHES[id(sync)] = cache
    return sync


POLICY = WaitForPodsReady(
    enable=True,
    timeout_seconds=60,
    requeuing=RequeuingStrategy(backoff_base_seconds=10, backoff_max_seconds=15, backoff_limit_count=2),
)


async def _admitted(kube: FakeKube, at: datetime) -> Object:
    job = await kube.create(r.JOB, make_job("train", parallelism=2))
    workload = await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0))
    return await kube.replace_status(
        r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(workload), make_admission(main={"cpu": "f"}), now=at)
    )


async def _sync(kube: FakeKube, sync: WorkloadSync, now: datetime) -> tuple[Object, datetime | None]:
    cache = CACHES[id(sync)]
    cache.replace(r.JOB, kube.objects(r.JOB))
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    (workload,) = kube.objects(r.WORKLOAD)
    wake = await sync.sync(WorkloadRecord.of(workload), now)
    (after,) = kube.objects(r.WORKLOAD)
    return after, wake


async def test_not_ready_in_time_is_evicted_with_growing_backoff_then_deactivated() -> None:
    kube = FakeKube(clock=lambda: T0)
    sync = _workload_sync(kube, POLICY)
    await _admitted(kube, T0)

    # 1. Before the timeout nothing happens, and the loop is told when to look again.
    workload, wake = await _sync(kube, sync, T0 + timedelta(seconds=30))
    assert wake == T0 + timedelta(seconds=60)
    assert not WorkloadRecord.of(workload).evicted

    # 2. At the timeout: evicted for PodsReadyTimeout, first requeue after the base backoff.
    now = T0 + timedelta(seconds=61)
    workload, _ = await _sync(kube, sync, now)
    evicted = conditions.find(workload["status"]["conditions"], "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "PodsReadyTimeout"
    assert workload["status"]["requeueState"] == {
        "count": 1,
        "requeueAt": conditions.format_time(now + timedelta(seconds=10)),
    }

    # 3. Quota given back and readmitted later: the count survives, the next backoff doubles (capped at 15 s).
    workload = await kube.replace_status(r.WORKLOAD, wl_life.released(WorkloadRecord.of(workload), now=now))
    requeued = conditions.find(workload["status"]["conditions"], "Requeued")
    assert requeued is not None
    assert requeued["status"] == "False"
    t1 = now + timedelta(seconds=20)
    workload = await kube.replace_status(
        r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(workload), make_admission(main={"cpu": "f"}), now=t1)
    )
    assert workload["status"]["requeueState"] == {"count": 1}
    workload, _ = await _sync(kube, sync, t1 + timedelta(seconds=61))
    assert workload["status"]["requeueState"]["count"] == 2
    assert workload["status"]["requeueState"]["requeueAt"] == conditions.format_time(t1 + timedelta(seconds=61 + 15))

    # 4. Past backoffLimitCount: deactivated instead of requeued.
    workload = await kube.replace_status(r.WORKLOAD, wl_life.released(WorkloadRecord.of(workload), now=t1))
    t2 = t1 + timedelta(seconds=100)
    await kube.replace_status(
        r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(workload), make_admission(main={"cpu": "f"}), now=t2)
    )
    workload, _ = await _sync(kube, sync, t2 + timedelta(seconds=61))
    assert workload["spec"]["active"] is False
    evicted = conditions.find(workload["status"]["conditions"], "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "DeactivatedDueToRequeuingLimitExceeded"


async def test_ready_pods_stop_the_clock() -> None:
    kube = FakeKube(clock=lambda: T0)
    sync = _workload_sync(kube, POLICY)
    workload = await _admitted(kube, T0)
    ready = wl_life.pods_ready(WorkloadRecord.of(workload), ready=True, now=T0)
    assert ready is not None
    await kube.replace_status(r.WORKLOAD, ready)
    workload, wake = await _sync(kube, sync, T0 + timedelta(seconds=600))
    assert wake is None
    assert not WorkloadRecord.of(workload).evicted


async def test_disabled_by_default() -> None:
    kube = FakeKube(clock=lambda: T0)
    sync = _workload_sync(kube, None)
    await _admitted(kube, T0)
    workload, _ = await _sync(kube, sync, T0 + timedelta(days=1))
    assert not WorkloadRecord.of(workload).evicted


def test_job_pods_ready_counts_ready_and_succeeded() -> None:
    job = make_job(parallelism=3)
    job["status"] = {"ready": 2}
    assert not batch_job.pods_ready(BatchJob.of(job))
    job["status"] = {"ready": 2, "succeeded": 1}
    assert batch_job.pods_ready(BatchJob.of(job))
