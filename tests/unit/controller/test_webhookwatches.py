"""The webhook process's cache: every kind a ClusterView answer reads, and of Workloads only the admitted ones."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_admission, make_job
from webhook.api.views import BatchJob, WorkloadRecord
from webhook.controller.supervisor import Supervisor
from webhook.controller.webhookwatches import (
    WEBHOOK_WATCHES,
    AdmittedWorkloads,
    build_webhook_cache,
    start_webhook_watches,
)
from webhook.jobs import batch_job
from webhook.jobs import workload as wl_life
from webhook.kube import resources as r
from webhook.kube.objects import Object

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def _workloads(kube: FakeKube) -> tuple[Object, Object]:
    """An admitted Workload (of Job "run") and a pending one (of Job "wait")."""
    made = []
    for name in ("run", "wait"):
        job = await kube.create(r.JOB, make_job(name))
        made.append(await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0)))
    admitted = await kube.replace_status(
        r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(made[0]), make_admission(main={"cpu": "f"}), now=T0)
    )
    return admitted, made[1]


def _name(obj: Object) -> str:
    return str(obj["metadata"]["name"])


async def test_the_webhook_cache_holds_only_admitted_workloads_and_forgets_one_that_loses_its_admission() -> None:
    kube = FakeKube(clock=lambda: T0)
    await kube.create(r.NAMESPACE, {"metadata": {"name": "team-a", "labels": {"team": "a"}}})
    admitted, pending = await _workloads(kube)
    cache = build_webhook_cache()
    async with Supervisor() as tasks:
        informers = start_webhook_watches(kube, cache, tasks)
        await asyncio.wait_for(cache.wait_synced(), 2)
        assert sorted(tasks.names) == sorted(f"watch:{spec.resource}" for spec in WEBHOOK_WATCHES)
        assert len(informers) == len(WEBHOOK_WATCHES)
        assert cache.namespace_labels("team-a") == {"team": "a"}
        assert cache.workload("team-a", _name(admitted)) is not None
        assert cache.workload("team-a", _name(pending)) is None
        # Its admission cleared (given back): it leaves the selection and the cache.
        await kube.replace_status(r.WORKLOAD, wl_life.released(WorkloadRecord.of(admitted), now=T0))
        for _ in range(100):
            if cache.workload("team-a", _name(admitted)) is None:
                break
            await asyncio.sleep(0.01)
        assert cache.workload("team-a", _name(admitted)) is None


async def test_the_sink_drops_what_is_not_admitted_whatever_the_server_sends() -> None:
    kube = FakeKube(clock=lambda: T0)
    admitted, pending = await _workloads(kube)
    cache = build_webhook_cache()
    sink = AdmittedWorkloads(cache)
    sink.replace(r.WORKLOAD, [admitted, pending])  # a server without the field selector would send both
    assert cache.workload("team-a", _name(admitted)) is not None
    assert cache.workload("team-a", _name(pending)) is None
    sink.apply(r.WORKLOAD, "MODIFIED", pending)
    assert cache.workload("team-a", _name(pending)) is None
    sink.apply(
        r.WORKLOAD, "MODIFIED", wl_life.released(WorkloadRecord.of(admitted), now=T0)
    )  # no longer admitted: forgotten
    assert cache.workload("team-a", _name(admitted)) is None
    sink.replace(r.NAMESPACE, [{"metadata": {"name": "ns", "labels": {}}}])  # other kinds pass unchanged
    assert cache.namespace_labels("ns") == {}
