"""The Snapshotter on the in-memory fake: what a snapshot shows, and when it says the scheduler must decide again."""

from __future__ import annotations

from tests.unit.controller.test_admitter import one_cpu_jobs
from tests.unit.core.builders import workload
from tests.unit.jobs.builders import make_job
from webhook.api.views import BatchJob
from webhook.controller.reservations import Reservations
from webhook.controller.snapshotter import Snapshotter
from webhook.jobs import batch_job
from webhook.kube import resources as r

AT = "2025-01-01T00:00:00Z"
ADMISSION = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "default"}, "count": 1}]}


def names(snapshotter: Snapshotter, reservations: Reservations) -> dict[str, bool]:
    """Each Workload of a new snapshot, by name: whether it holds quota."""
    return {w.name: w.admission is not None for w in snapshotter.take(reservations).workloads}


async def test_an_assumed_admission_shows_as_held_and_is_not_a_change_to_schedule_again() -> None:
    _kube, cache = await one_cpu_jobs(2)
    snapshotter, reservations = Snapshotter(cache), Reservations()
    first = snapshotter.take(reservations)
    assert snapshotter.dirty  # the first snapshot: everything is new
    key = (first.workloads[0].namespace, first.workloads[0].name)

    snapshotter.dirty = False
    reservations.assume(key, ADMISSION, base_version=0)
    snapshotter.assumed(key, ADMISSION)
    held = names(snapshotter, reservations)

    assert held[key[1]]
    assert sum(held.values()) == 1
    assert not snapshotter.dirty  # the pass's own decision: nothing to decide again


async def test_a_workload_that_changes_or_finishes_is_a_change_and_a_finished_one_leaves_the_snapshot() -> None:
    kube, cache = await one_cpu_jobs(2)
    snapshotter, reservations = Snapshotter(cache), Reservations()
    assert set(names(snapshotter, reservations)) == {w["metadata"]["name"] for w in kube.objects(r.WORKLOAD)}
    snapshotter.dirty = False
    assert len(names(snapshotter, reservations)) == 2
    assert not snapshotter.dirty  # nothing changed in between

    first = kube.objects(r.WORKLOAD)[0]
    done = first["metadata"]["name"]
    finished = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "", "lastTransitionTime": AT}
    await kube.replace_status(r.WORKLOAD, first | {"status": {"conditions": [finished]}})
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    left = names(snapshotter, reservations)

    assert done not in left
    assert len(left) == 1
    assert [w.name for w in snapshotter.finished()] == [done]
    assert snapshotter.dirty  # freed quota: the scheduler decides again


async def test_a_new_workload_joins_the_backlog_kept_from_the_last_snapshot() -> None:
    kube, cache = await one_cpu_jobs(0)  # the queues, nothing queued
    snapshotter, reservations = Snapshotter(cache), Reservations()
    snapshotter.take(reservations)
    kept = snapshotter.backlog

    job = await kube.create(r.JOB, make_job("late", namespace="team-a", queue="q", parallelism=1))
    created = await kube.create(r.WORKLOAD, batch_job.workload_for(BatchJob.of(job), priority=0))
    cache.replace(r.WORKLOAD, kube.objects(r.WORKLOAD))
    snapshotter.take(reservations)

    assert snapshotter.backlog is kept  # told of the change, not built again
    assert ("team-a", created["metadata"]["name"]) in kept


async def test_a_stale_demand_cache_is_replaced_with_a_backlog_built_on_the_new_one() -> None:
    _kube, cache = await one_cpu_jobs(3)
    snapshotter, reservations = Snapshotter(cache), Reservations()
    snapshot = snapshotter.take(reservations)
    demands, backlog = snapshotter.demands, snapshotter.backlog
    snapshotter.trim(snapshot.workloads)
    assert snapshotter.demands is demands  # as many demands as Workloads: kept

    for i in range(1_010):  # demands of Workloads long gone (each its own pod sets)
        demands.of(workload(f"gone-{i}"))
    snapshotter.trim(snapshot.workloads)

    assert snapshotter.demands is not demands
    assert snapshotter.backlog is not backlog
    assert all(("team-a", w.name) in snapshotter.backlog for w in snapshot.workloads)
