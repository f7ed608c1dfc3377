"""Benchmark of one scheduling pass (``webhook.core.scheduler.schedule``).

Scenarios:
1. large scale: 1,000 ClusterQueues in 10 cohorts, 50,000 pending workloads with Kueue's large-scale mix
   (small 1 CPU prio 50, medium 5 CPU prio 100, large 20 CPU prio 200; 35/10/5 per queue), nominal 20 CPU,
   borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue LowerPriority, as Kueue's generator sets up;
2. the same with 150 CPU per queue, so most workloads fit (many by borrowing);
3. the same with every queue already full of low-priority admitted work, so large workloads preempt;
4. deep queue: one ClusterQueue with 10,000 pending workloads of the same mix and room for most of them;
5. the baseline's medium drain: Kueue's baseline queues (5 cohorts of 6 ClusterQueues, 20 CPU each, borrowingLimit
   100), every cohort full of admitted medium workloads (4 per queue), 70 medium and 330 small waiting per queue:
   the pass ``bench.baseline`` runs after every finish once its large phase ends (nothing more fits);
6. cohort tree: the large-scale queues and workloads in a three-level tree of 100 Cohorts (an organisation, 9
   departments, 90 teams; ~11 ClusterQueues per team, the organisation owning 2,000 CPU of its own), once
   without fair sharing and once with it (``--tree-only`` runs just this pair).

Run: ``.venv/bin/python -m bench.scheduling [--runs N] [--profile]``. Prints the machine, the median pass
time over N runs (a full pass, as the visibility API runs it, and the admitter's: a backlog kept from pass to pass
and only each queue's front explained), decisions and admissions per second, peak RSS, and a cProfile summary when
a pass takes more than a second (or with ``--profile``).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from bench.machine import describe
from webhook.api.clusterqueue import (
    ANY,
    LOWER_PRIORITY,
    ClusterQueue,
    FlavorQuotas,
    Preemption,
    ResourceGroup,
    ResourceQuota,
)
from webhook.api.cohort import Cohort
from webhook.api.constants import COND_QUOTA_RESERVED, PENDING_REASON_POSITIONS
from webhook.api.flavor import ResourceFlavor
from webhook.api.localqueue import LocalQueue
from webhook.api.quantity import Quantity
from webhook.api.selector import EVERYTHING
from webhook.api.workload import Admission, Condition, PodSet, PodSetAssignment, Workload
from webhook.core.backlog import Backlog
from webhook.core.decisions import SchedulingResult
from webhook.core.fairsharing import FairSharing
from webhook.core.scheduler import schedule
from webhook.core.snapshot import Snapshot

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=1)
# (name, cpu, priority, per queue of 50) — Kueue's test/performance/scheduler large-scale classes.
MIX = (("small", 1, 50, 35), ("medium", 5, 100, 10), ("large", 20, 200, 5))


def _queue(name: str, cohort: str | None, nominal: int, borrowing: int | None) -> ClusterQueue:
    cpu = ResourceQuota(
        "cpu", Quantity.from_units(nominal), None if borrowing is None else Quantity.from_units(borrowing)
    )
    return ClusterQueue(
        name=name,
        resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("default", (cpu,)),)),),
        cohort=cohort,
        namespace_selector=EVERYTHING,
        preemption=Preemption(within_cluster_queue=LOWER_PRIORITY, reclaim_within_cohort=ANY),
    )


def _workloads(queue: str, namespace: str, count: int, start: int) -> list[Workload]:
    out: list[Workload] = []
    i = 0
    while len(out) < count:
        for kind, cpu, priority, n in MIX:
            for _ in range(n):
                if len(out) == count:
                    break
                requests = {"cpu": Quantity.from_units(cpu)}
                out.append(
                    Workload(
                        namespace=namespace,
                        name=f"{queue}-{kind}-{i}",
                        uid=f"{queue}-{i}",
                        pod_sets=(PodSet("main", 1, requests),),
                        queue_name=queue,
                        priority=priority,
                        created=T0 + timedelta(milliseconds=start + i),
                    )
                )
                i += 1
    return out


def _one(
    lq: LocalQueue, name: str, cpu: int, *, priority: int = 0, created: datetime, admitted_at: datetime | None = None
) -> Workload:
    """A workload of one pod asking ``cpu`` CPU in ``lq``; admitted to its ClusterQueue at ``admitted_at`` if given."""
    usage = {"cpu": Quantity.from_units(cpu)}
    admitted = admitted_at is not None
    return Workload(
        namespace=lq.namespace,
        name=name,
        uid=name,
        pod_sets=(PodSet("main", 1, usage),),
        queue_name=lq.name,
        priority=priority,
        created=created,
        admission=Admission(lq.cluster_queue, (PodSetAssignment("main", {"cpu": "default"}, usage, 1),))
        if admitted
        else None,
        conditions=(Condition(COND_QUOTA_RESERVED, "True", "QuotaReserved", "", admitted_at),) if admitted else (),
    )


def _cohort_queues(cohorts: int, per_cohort: int) -> Iterator[tuple[int, int, ClusterQueue, LocalQueue]]:
    """Kueue's generator's queues: ``cq-C-K`` in ``cohort-C`` (nominal 20 CPU, borrowingLimit 100), each with its
    LocalQueue in namespace ``ns-C-K``; yielded with C and K."""
    for c in range(cohorts):
        for k in range(per_cohort):
            name = f"cq-{c}-{k}"
            yield c, k, _queue(name, f"cohort-{c}", 20, 100), LocalQueue(f"ns-{c}-{k}", name, name)


def large_scale() -> Snapshot:
    cqs, lqs, wls = [], [], []
    for c, k, cq, lq in _cohort_queues(10, 100):
        cqs.append(cq)
        lqs.append(lq)
        wls += _workloads(cq.name, lq.namespace, 50, start=(c * 100 + k) * 7)
    return Snapshot(cqs, [ResourceFlavor("default")], lqs, wls)


def roomy() -> Snapshot:
    """As ``large_scale`` but with 150 CPU per queue: most workloads fit, many by borrowing."""
    snap = large_scale()
    cqs = [_queue(cq.name, cq.cohort, 150, 100) for cq in snap.cluster_queues]
    return Snapshot(cqs, snap.flavors, snap.local_queues, snap.workloads)


def preempting() -> Snapshot:
    """As ``large_scale`` but every queue is already full of 20 small admitted workloads (priority 0)."""
    snap = large_scale()
    holders = [
        _one(lq, f"{lq.name}-running-{i}", 1, created=T0 - timedelta(hours=1), admitted_at=T0 - timedelta(minutes=i))
        for lq in snap.local_queues
        for i in range(20)
    ]
    return Snapshot(snap.cluster_queues, snap.flavors, snap.local_queues, [*holders, *snap.workloads])


def deep_queue() -> Snapshot:
    cq = _queue("deep", None, 30_000, None)
    wls = _workloads("deep", "ns-deep", 10_000, start=0)
    return Snapshot([cq], [ResourceFlavor("default")], [LocalQueue("ns-deep", "deep", "deep")], wls)


def baseline_drain() -> Snapshot:
    cqs, lqs, wls = [], [], []
    for _, _, cq, lq in _cohort_queues(5, 6):
        cqs.append(cq)
        lqs.append(lq)
        for kind, cpu, priority, count in (("running", 5, 100, 4), ("medium", 5, 100, 70), ("small", 1, 50, 330)):
            for i in range(count):
                created = T0 + timedelta(milliseconds=i)
                admitted_at = T0 if kind == "running" else None
                wls.append(
                    _one(lq, f"{cq.name}-{kind}-{i}", cpu, priority=priority, created=created, admitted_at=admitted_at)
                )
    return Snapshot(cqs, [ResourceFlavor("default")], lqs, wls)


def cohort_tree() -> Snapshot:
    """The large-scale queues, each team's queues in a team Cohort, teams in departments, one organisation."""
    snap = large_scale()
    org_cpu = ResourceQuota("cpu", Quantity.from_units(2000))
    cohorts = [Cohort("org", None, (ResourceGroup(("cpu",), (FlavorQuotas("default", (org_cpu,)),)),))]
    cohorts += [Cohort(f"dept-{d}", "org") for d in range(9)]
    cohorts += [Cohort(f"team-{t}", f"dept-{t % 9}") for t in range(90)]
    cqs = [_queue(cq.name, f"team-{i % 90}", 20, 100) for i, cq in enumerate(snap.cluster_queues)]
    return Snapshot(cqs, snap.flavors, snap.local_queues, snap.workloads, cohorts=cohorts)


def machine() -> str:
    return describe()


def _time_pass(snap: Snapshot, fair: FairSharing | None) -> tuple[float, SchedulingResult]:
    start = time.perf_counter()
    result = schedule(snap, now=NOW, fair_sharing=fair)
    return time.perf_counter() - start, result


def run(
    name: str,
    build: Callable[[], Snapshot],
    runs: int,
    profile: bool,
    *,
    frozen: bool,
    fair: FairSharing | None = None,
) -> None:
    snap = build()
    label = ""
    if frozen:
        # The snapshot is long-lived data: moving it out of the collector's generations (as a reconciler
        # would do for its cache) stops every pass from re-scanning 50,000 objects.
        gc.collect()
        gc.freeze()
        label = " [gc.freeze() after building the snapshot]"
    timings = []
    result = None
    for _ in range(runs):
        elapsed, result = _time_pass(snap, fair)
        timings.append(elapsed)
    assert result is not None
    # The admitter's pass: the backlog kept from pass to pass (built once here), only each queue's front explained.
    backlog = Backlog.of(snap.workloads)
    kept = []
    for _ in range(runs):
        start = time.perf_counter()
        schedule(snap, now=NOW, fair_sharing=fair, backlog=backlog, positions=PENDING_REASON_POSITIONS)
        kept.append(time.perf_counter() - start)
    median = statistics.median(timings)
    decided = len(result.admitted) + len(result.pending) + len(result.preemptions)
    waiting = sum(1 for w in snap.workloads if w.admission is None)
    print(f"\n== {name}: {len(snap.cluster_queues)} ClusterQueues, {waiting} pending workloads")
    spread = f"min {min(timings) * 1000:.0f}, max {max(timings) * 1000:.0f}"
    print(f"   pass time: median {median * 1000:.0f} ms over {runs} runs ({spread}){label}")
    print(
        f"   with a kept backlog, the first {PENDING_REASON_POSITIONS} of each queue explained (the admitter's pass): "
        f"median {statistics.median(kept) * 1000:.0f} ms"
    )
    print(f"   admitted {len(result.admitted)}, preemptions {len(result.preemptions)}, pending {len(result.pending)}")
    print(
        f"   decisions per second: {decided / median:,.0f}; admissions per second: {len(result.admitted) / median:,.0f}"
    )
    if profile or median > 1.0:
        profiler = cProfile.Profile()
        profiler.enable()
        schedule(snap, now=NOW, fair_sharing=fair)
        profiler.disable()
        print("   profile (top 12 by own time):")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--tree-only", action="store_true", help="only the cohort tree, without and with fair sharing")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    fair = FairSharing(enabled=True)
    for frozen in (False, True):
        run("cohort tree, fair sharing off", cohort_tree, args.runs, args.profile, frozen=frozen)
        run("cohort tree, fair sharing on", cohort_tree, args.runs, args.profile, frozen=frozen, fair=fair)
        if args.tree_only:
            gc.unfreeze()
            continue
        run("large scale", large_scale, args.runs, args.profile, frozen=frozen)
        run("large scale, 150 CPU per queue", roomy, args.runs, args.profile, frozen=frozen)
        run("large scale, queues full of low-priority work", preempting, args.runs, args.profile, frozen=frozen)
        run("deep queue", deep_queue, args.runs, args.profile, frozen=frozen)
        run("baseline's medium drain, nothing fits", baseline_drain, args.runs, args.profile, frozen=frozen)
        gc.unfreeze()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"\npeak RSS: {peak_kib / 1024:.0f} MiB (whole process, including the snapshots)")


if __name__ == "__main__":
    main()
