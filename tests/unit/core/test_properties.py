"""Properties of the scheduler under random queues, cohorts and admit/finish/preempt interleavings.

The checks are written against the committed state (what the reconciler would have written), with an
oracle that restates the quota rules as invariants instead of reusing the scheduler's arithmetic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from datetime import timedelta

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.unit.core.builders import NOW, NS, cluster_queue, group, local_queue, pod_set, quota, snapshot, workload
from webhook.api import constants
from webhook.api.clusterqueue import (
    ANY,
    BEST_EFFORT_FIFO,
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    MAY_STOP_SEARCH,
    NEVER,
    STRICT_FIFO,
    TRY_NEXT_FLAVOR,
    ClusterQueue,
    FlavorFungibility,
)
from webhook.api.workload import Condition, Workload
from webhook.core.backlog import Backlog
from webhook.core.decisions import RETRY_ON_TIME, SchedulingResult
from webhook.core.scheduler import schedule
from webhook.core.snapshot import Snapshot
from webhook.core.usage import cluster_queue_usage

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UNIT = 10**9


@st.composite
def cluster_queues(draw: st.DrawFn, *, preemption: bool) -> list[ClusterQueue]:
    flavor_names = [f"f{i}" for i in range(draw(st.integers(1, 2)))]
    cqs = []
    for i in range(draw(st.integers(1, 4))):
        cohort = draw(st.sampled_from(["c0", None, "c1"]))
        order = draw(st.permutations(flavor_names))[: draw(st.integers(1, len(flavor_names)))]
        flavors = []
        for name in order:
            nominal = draw(st.integers(0, 8))
            borrowing = draw(st.none() | st.integers(0, 6)) if cohort else None
            lending = draw(st.none() | st.integers(0, nominal)) if cohort else None
            flavors.append((name, [quota("cpu", nominal, borrowing=borrowing, lending=lending)]))
        within = reclaim = borrow = NEVER
        strategy = BEST_EFFORT_FIFO
        if preemption:
            strategy = draw(st.sampled_from([BEST_EFFORT_FIFO, STRICT_FIFO]))
            within = draw(st.sampled_from([LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL_PRIORITY, NEVER]))
            reclaim = draw(st.sampled_from([ANY, LOWER_PRIORITY, NEVER]))
            borrow = draw(st.sampled_from([LOWER_PRIORITY, NEVER])) if reclaim != NEVER else NEVER
        fungibility = FlavorFungibility(
            when_can_borrow=draw(st.sampled_from([MAY_STOP_SEARCH, TRY_NEXT_FLAVOR])),
            when_can_preempt=draw(st.sampled_from([MAY_STOP_SEARCH, TRY_NEXT_FLAVOR]))
            if preemption
            else TRY_NEXT_FLAVOR,
        )
        cqs.append(
            cluster_queue(
                f"q{i}",
                group(*flavors),
                cohort=cohort,
                strategy=strategy,
                within=within,
                reclaim=reclaim,
                borrow_within=borrow,
                fungibility=fungibility,
            )
        )
    return cqs


def operations(queues: int) -> st.SearchStrategy[list[tuple[object, ...]]]:
    """Batches of submissions and finishes, each followed by a pass, so queues fill and quota runs out."""
    submit = st.tuples(
        st.just("submit"),
        st.integers(0, queues - 1),  # queue
        st.integers(1, 3),  # pods
        st.integers(1, 4),  # cpu per pod
        st.booleans(),  # minCount 1
        st.integers(0, 2),  # priority (plus the batch number, so later arrivals may preempt)
    )
    finish = st.tuples(st.just("finish"), st.integers(0, 50))
    batch = st.tuples(st.lists(submit, min_size=1, max_size=8), st.lists(finish, max_size=2))
    return st.lists(batch, min_size=2, max_size=4).map(
        lambda batches: [
            op
            for number, (subs, fins) in enumerate(batches)
            for op in (*[(*sub[:5], sub[5] + number) for sub in subs], *fins, ("pass",))
        ]
    )


@dataclass
class Cluster:
    """The committed state, as the API server would hold it after the reconciler applied each decision."""

    cqs: list[ClusterQueue]
    workloads: dict[str, Workload] = field(default_factory=dict)
    created: int = 0

    def snapshot(self) -> Snapshot:
        return snapshot(self.cqs, list(self.workloads.values()))

    def submit(self, queue: int, pods: int, cpu: int, partial: bool, priority: int) -> None:
        name = f"w{self.created:03}"
        ps = pod_set(count=pods, min_count=1 if partial and pods > 1 else None, cpu=cpu)
        self.workloads[name] = workload(name, ps, queue=f"q{queue}", priority=priority, age=self.created)
        self.created += 1

    def finish(self, index: int) -> None:
        holders = sorted(n for n, w in self.workloads.items() if w.holds_quota)
        if holders:
            name = holders[index % len(holders)]
            wl = self.workloads[name]
            self.workloads[name] = replace(wl, conditions=(*wl.conditions, Condition(constants.COND_FINISHED, "True")))

    def apply(self, result: SchedulingResult) -> None:
        for p in result.preemptions:
            for v in p.victims:
                self.workloads[v.workload[1]] = replace(self.workloads[v.workload[1]], admission=None, conditions=())
        for a in result.admitted:
            cond = Condition(constants.COND_QUOTA_RESERVED, "True", constants.REASON_QUOTA_RESERVED, "", NOW)
            self.workloads[a.workload[1]] = replace(
                self.workloads[a.workload[1]], admission=a.admission(), conditions=(cond,)
            )


def usage(cluster: Cluster) -> dict[str, dict[tuple[str, str], int]]:
    holders = list(cluster.workloads.values())
    return {cq.name: {fr: q.nano for fr, q in cluster_queue_usage(cq.name, holders).items()} for cq in cluster.cqs}


def limits(cq: ClusterQueue) -> dict[tuple[str, str], tuple[int, int | None, int]]:
    """(nominal, borrowing limit, guaranteed) per flavor-resource, from the spec."""
    out = {}
    for f in cq.resource_groups[0].flavors:
        (r,) = f.resources
        lending = r.lending_limit.nano if r.lending_limit is not None else None
        guaranteed = r.nominal.nano - lending if lending is not None else 0
        out[(f.name, r.name)] = (
            r.nominal.nano,
            r.borrowing_limit.nano if r.borrowing_limit is not None else None,
            guaranteed,
        )
    return out


def quota_respected(cqs: list[ClusterQueue], used: dict[str, dict[tuple[str, str], int]]) -> list[str]:
    """Every violated rule, spelled out: empty when usage stays within nominal + borrowable, and lending limits."""
    broken = []
    pools: dict[tuple[str, tuple[str, str]], list[int]] = {}
    for cq in cqs:
        for fr, (nominal, borrowing, guaranteed) in limits(cq).items():
            u = used[cq.name].get(fr, 0)
            cap = nominal if cq.cohort is None else (nominal + borrowing if borrowing is not None else None)
            if cap is not None and u > cap:
                broken.append(f"{cq.name} uses {u} of {fr}, cap {cap}")
            if cq.cohort:
                pool = pools.setdefault((cq.cohort, fr), [0, 0])
                pool[0] += nominal - guaranteed  # what it may lend
                pool[1] += max(0, u - guaranteed)  # what it draws beyond what it keeps for itself
        for fr in used[cq.name]:
            if fr not in limits(cq):
                broken.append(f"{cq.name} uses {fr}, which it has no quota for")
    for (cohort, fr), (lendable, drawn) in pools.items():
        if drawn > lendable:
            broken.append(f"cohort {cohort} draws {drawn} of {fr}, members lend only {lendable}")
    return broken


def fits_somewhere(
    cq: ClusterQueue, cqs: list[ClusterQueue], used: dict[str, dict[tuple[str, str], int]], need: int
) -> bool:
    """Oracle: adding ``need`` CPU to some flavor of ``cq`` keeps every quota rule."""
    for fr in limits(cq):
        trial = {name: dict(u) for name, u in used.items()}
        trial[cq.name][fr] = trial[cq.name].get(fr, 0) + need
        if not quota_respected(cqs, trial):
            return True
    return False


def check_decisions(cluster: Cluster, result: SchedulingResult) -> None:
    for a in result.admitted:
        spec = cluster.workloads[a.workload[1]]
        assert [p.name for p in a.pod_sets] == [p.name for p in spec.pod_sets]
        for got, want in zip(a.pod_sets, spec.pod_sets, strict=True):
            partial_ok = want.min_count is not None and want.min_count <= got.count < want.count
            assert got.count == want.count or partial_ok, f"{a.workload} admitted {got.count} of {want.count}"
            assert got.resource_usage == {r: v * got.count for r, v in want.requests.items()}
            assert set(got.flavors) == set(want.requests)


@SETTINGS
@given(data=st.data())
def test_quota_and_all_or_nothing_hold_under_any_interleaving(data: st.DataObject) -> None:
    cqs = data.draw(cluster_queues(preemption=True))
    cluster = Cluster(cqs)
    shuffle = data.draw(st.randoms(use_true_random=False))
    for op in [*data.draw(operations(len(cqs))), ("pass",)]:
        if op[0] == "submit":
            cluster.submit(*op[1:])  # type: ignore[arg-type]
        elif op[0] == "finish":
            cluster.finish(op[1])  # type: ignore[arg-type]
        else:
            snap = cluster.snapshot()
            result = schedule(snap, now=NOW)
            # Deterministic: the same snapshot, in any order, gives the same decisions.
            assert schedule(snap, now=NOW) == result
            assert schedule(_shuffled(snap, shuffle), now=NOW) == result
            check_decisions(cluster, result)
            victims = [v.workload for p in result.preemptions for v in p.victims]
            assert len(victims) == len(set(victims)), "a workload was chosen as a victim twice"
            cluster.apply(result)
            assert quota_respected(cqs, usage(cluster)) == []
            event("admitted", len(result.admitted) > 0)
            event("preempted", len(result.preemptions) > 0)
            event("partially admitted", any(a.partial for a in result.admitted))
            event("borrowed", any(a.borrowing for a in result.admitted))


@SETTINGS
@given(data=st.data())
def test_best_effort_fifo_leaves_nothing_pending_that_fits(data: st.DataObject) -> None:
    cqs = data.draw(cluster_queues(preemption=False))
    cluster = Cluster(cqs)
    for op in [*data.draw(operations(len(cqs))), ("pass",)]:
        if op[0] == "submit":
            cluster.submit(*op[1:])  # type: ignore[arg-type]
        elif op[0] == "finish":
            cluster.finish(op[1])  # type: ignore[arg-type]
        else:
            result = schedule(cluster.snapshot(), now=NOW)
            cluster.apply(result)
            used = usage(cluster)
            by_name = {cq.name: cq for cq in cqs}
            for p in result.pending:
                wl = cluster.workloads[p.workload[1]]
                (ps,) = wl.pod_sets
                smallest = (ps.min_count or ps.count) * ps.requests["cpu"].nano
                assert not fits_somewhere(by_name[wl.queue_name], cqs, used, smallest), (
                    f"{p.workload} fits: {p.message}"
                )


@SETTINGS
@given(data=st.data())
def test_a_backlog_kept_from_pass_to_pass_decides_as_one_built_for_the_pass(data: st.DataObject) -> None:
    """The reconciler keeps the pending workloads in a ``Backlog`` told of each change; passes on it decide as passes
    that build one from the snapshot, and explaining only each queue's front explains it as the whole would. With
    LocalQueues in two namespaces (one of them missing some) and workloads backing off after an eviction."""
    cqs = data.draw(cluster_queues(preemption=data.draw(st.booleans())))
    cluster = Cluster(cqs)
    spare = [
        local_queue(cq.name, name=f"q{i}", namespace="spare") for i, cq in enumerate(cqs) if data.draw(st.booleans())
    ]
    backlog, told = Backlog(), dict[str, Workload]()
    for op in [*data.draw(operations(len(cqs))), ("pass",)]:
        if op[0] == "submit":
            cluster.submit(*op[1:])  # type: ignore[arg-type]
            name = f"w{cluster.created - 1:03}"
            backoff = data.draw(st.sampled_from([None, -5, 5]))
            cluster.workloads[name] = replace(
                cluster.workloads[name],
                namespace=data.draw(st.sampled_from([NS, "spare"])),
                requeue_at=None if backoff is None else NOW + timedelta(seconds=backoff),
            )
        elif op[0] == "finish":
            cluster.finish(op[1])  # type: ignore[arg-type]
        else:
            for name, wl in cluster.workloads.items():
                if told.get(name) is not wl:
                    backlog.put(wl.key, wl)
                    told[name] = wl
            snap = replace(cluster.snapshot(), local_queues=[*cluster.snapshot().local_queues, *spare])
            result = schedule(snap, now=NOW)
            assert schedule(snap, now=NOW, backlog=backlog) == result
            front = data.draw(st.integers(0, 3))
            explained = schedule(snap, now=NOW, backlog=backlog, positions=front)
            assert (explained.admitted, explained.preemptions) == (result.admitted, result.preemptions)
            assert explained.pending == tuple(p for p in result.pending if p.position is None or p.position <= front)
            cluster.apply(result)
            event("left behind a shape", any(p.position is not None and p.position > front for p in result.pending))
            event("backing off", any(p.retry_on == RETRY_ON_TIME for p in result.pending))


def _shuffled(snap: Snapshot, rnd: random.Random) -> Snapshot:
    cqs, wls = list(snap.cluster_queues), list(snap.workloads)
    rnd.shuffle(cqs)
    rnd.shuffle(wls)
    return Snapshot(cqs, list(snap.flavors), list(snap.local_queues), wls, snap.namespaces)


def test_oracle_can_fail() -> None:
    # The invariant checker is not vacuous: borrowing limits, lending limits and nominal quota are enforced.
    f0 = ("f0", "cpu")
    lender = [
        cluster_queue("a", group(("f0", [quota("cpu", 2, lending=1)])), cohort="c"),
        cluster_queue("b", group(("f0", [quota("cpu", 2)])), cohort="c"),
    ]
    assert quota_respected(lender, {"a": {f0: 0}, "b": {f0: 3 * UNIT}}) == []
    assert quota_respected(lender, {"a": {f0: 0}, "b": {f0: 4 * UNIT}}) != []  # a lends 2, limit 1
    limited = [
        cluster_queue("a", group(("f0", [quota("cpu", 2)])), cohort="c"),
        cluster_queue("b", group(("f0", [quota("cpu", 2, borrowing=1)])), cohort="c"),
    ]
    assert quota_respected(limited, {"a": {f0: 0}, "b": {f0: 3 * UNIT}}) == []
    assert quota_respected(limited, {"a": {f0: 0}, "b": {f0: 4 * UNIT}}) != []  # b borrows 2, limit 1
    alone = [cluster_queue("a", group(("f0", [quota("cpu", 2)])))]
    assert quota_respected(alone, {"a": {f0: 3 * UNIT}}) != []
