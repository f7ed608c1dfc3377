""" "Would it fit?": what the scheduler would do with one workload, answered from a snapshot, as data.

Owns: ``would_fit`` (a workload that does not exist yet: it is added to the snapshot, created ``now``, and one
scheduling pass is run) and ``explain_workload`` (one that exists: the same pass, unchanged snapshot), both
returning a ``FitAnswer``: admitted now or not, on which flavors, borrowing or not, what is missing (resource,
flavor, amount), what preemption would do (its victims), and the queue position it would take. The answer is the
scheduler's own decision (``core.schedule``), not a second opinion; only the shortages are re-derived, with the
scheduler's flavor assigner, against the usage the pass ends with.
Must not: do I/O, read the clock, or format text for people (callers render the answer).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from webhook.api.workload import Workload
from webhook.core.assignment import FIT, NO_FLAVOR, FlavorAssigner
from webhook.core.decisions import SchedulingResult
from webhook.core.demand import workload_demand
from webhook.core.quota import QuotaBook
from webhook.core.reasons import amount
from webhook.core.scheduler import schedule
from webhook.core.snapshot import Snapshot
from webhook.core.usage import usage_nano

ADMITTED: Final = "Admitted"  # quota would be reserved now
PREEMPTING: Final = "Preempting"  # admitted once the victims have been evicted
PENDING: Final = "Pending"

CANDIDATE_UID: Final = "turnstile-fit-candidate"


@dataclass(frozen=True, slots=True)
class Shortage:
    """One flavor the workload could not get for one resource, and by how much (amounts as people write them)."""

    pod_set: str
    resource: str
    flavor: str  # "" when no flavor of the queue covers the resource
    needed: str
    available: str
    missing: str  # needed - available (the whole need when the flavor is not eligible)
    note: str = ""  # why a flavor was not eligible, or "more than the queue can ever use"


@dataclass(frozen=True, slots=True)
class PreemptionVictim:
    namespace: str
    name: str
    cluster_queue: str
    reason: str


@dataclass(frozen=True, slots=True)
class FitAnswer:
    namespace: str
    name: str
    verdict: str  # ADMITTED | PREEMPTING | PENDING
    cluster_queue: str | None
    flavors: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # (pod set, ((resource, flavor), ...))
    borrowing: bool = False
    partial_count: int | None = None  # admitted with fewer pods (minCount): how many
    reason: str = ""  # the QuotaReserved=False reason the scheduler gives (WaitingForQuota, ...)
    message: str = ""  # the scheduler's own words, as written on the Workload
    position: int | None = None  # 1-based among the ClusterQueue's pending workloads, as the scheduler counts
    queue_length: int | None = None
    missing: tuple[Shortage, ...] = ()
    victims: tuple[PreemptionVictim, ...] = ()


def would_fit(snapshot: Snapshot, candidate: Workload, *, now: datetime) -> FitAnswer:
    """The answer for ``candidate`` as if it were created at ``now`` (any admission it carries is ignored)."""
    fresh = dataclasses.replace(
        candidate, admission=None, conditions=(), created=now, uid=candidate.uid or CANDIDATE_UID, requeue_at=None
    )
    others = [w for w in snapshot.workloads if (w.namespace, w.name) != (fresh.namespace, fresh.name)]
    return _answer(dataclasses.replace(snapshot, workloads=[*others, fresh]), fresh, now)


def explain_workload(snapshot: Snapshot, key: tuple[str, str], *, now: datetime) -> FitAnswer | None:
    """The answer for the workload ``key`` of the snapshot; None when it is not there."""
    found = next((w for w in snapshot.workloads if (w.namespace, w.name) == key), None)
    return None if found is None else _answer(snapshot, found, now)


def _answer(snapshot: Snapshot, wl: Workload, now: datetime) -> FitAnswer:
    key = (wl.namespace, wl.name)
    result = schedule(snapshot, now=now)
    if wl.admission is not None:
        return FitAnswer(
            wl.namespace,
            wl.name,
            ADMITTED,
            wl.admission.cluster_queue,
            tuple((p.name, tuple(sorted(p.flavors.items()))) for p in wl.admission.pod_set_assignments),
            reason="QuotaReserved",
            message=f"already holds quota in ClusterQueue {wl.admission.cluster_queue}",
        )
    for a in result.admitted:
        if a.workload == key:
            partial = sum(p.count for p in a.pod_sets) if a.partial else None
            return FitAnswer(
                wl.namespace,
                wl.name,
                ADMITTED,
                a.cluster_queue,
                tuple((p.name, tuple(sorted(p.flavors.items()))) for p in a.pod_sets),
                borrowing=a.borrowing,
                partial_count=partial,
                message=f"fits now in ClusterQueue {a.cluster_queue}" + (" (borrowing)" if a.borrowing else ""),
            )
    flavors = _planned_flavors(snapshot, result, wl)
    for p in result.preemptions:
        if p.preemptor == key:
            victims = tuple(
                PreemptionVictim(v.workload[0], v.workload[1], v.cluster_queue, v.reason) for v in p.victims
            )
            return FitAnswer(
                wl.namespace,
                wl.name,
                PREEMPTING,
                p.cluster_queue,
                flavors,
                message=f"fits in ClusterQueue {p.cluster_queue} once {len(victims)} workload(s) are preempted",
                victims=victims,
            )
    pending = next((p for p in result.pending if p.workload == key), None)
    if pending is None:  # finished or deactivated: the scheduler does not consider it
        return FitAnswer(wl.namespace, wl.name, PENDING, None, reason="Inactive", message="not considered")
    return FitAnswer(
        wl.namespace,
        wl.name,
        PENDING,
        pending.cluster_queue,
        reason=pending.reason,
        message=pending.detail,
        position=pending.position,
        queue_length=pending.queue_length,
        missing=_shortages(snapshot, result, wl, pending.cluster_queue),
    )


def _book(snapshot: Snapshot, result: SchedulingResult) -> QuotaBook:
    """Usage as the pass leaves it: what is held, plus what the pass admitted."""
    book = QuotaBook(snapshot.cluster_queues)
    for held in snapshot.workloads:
        if held.holds_quota and held.admission is not None and held.admission.cluster_queue in book.queues:
            book.queues[held.admission.cluster_queue].add(usage_nano(held))
    for a in result.admitted:
        usage: dict[tuple[str, str], int] = {}
        for p in a.pod_sets:
            for resource, q in p.resource_usage.items():
                if (flavor := p.flavors.get(resource)) is not None:
                    usage[(flavor, resource)] = usage.get((flavor, resource), 0) + q.nano
        book.queues[a.cluster_queue].add(usage)
    return book


def _assigner(snapshot: Snapshot, result: SchedulingResult, cq_name: str | None) -> FlavorAssigner | None:
    cq = next((c for c in snapshot.cluster_queues if c.name == cq_name), None)
    known = {f.name for f in snapshot.flavors}
    if cq is None or any(f.name not in known for g in cq.resource_groups for f in g.flavors):
        return None  # the scheduler's reason (missing queue or flavor) says it all
    book = _book(snapshot, result)
    return FlavorAssigner(cq, book.queues[cq.name], {f.name: f for f in snapshot.flavors})


def _planned_flavors(
    snapshot: Snapshot, result: SchedulingResult, wl: Workload
) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    lq = next((q for q in snapshot.local_queues if (q.namespace, q.name) == (wl.namespace, wl.queue_name)), None)
    assigner = _assigner(snapshot, result, lq.cluster_queue if lq else None)
    if assigner is None:
        return ()
    assigner.preemption_possible = True  # the scheduler found victims: ask for the flavors preemption frees
    demand = workload_demand(wl)
    a = assigner.assign(demand, demand.full_counts())
    return tuple((ps.name, tuple(sorted(f.items()))) for ps, f in zip(wl.pod_sets, a.flavors, strict=False))


def _shortages(snapshot: Snapshot, result: SchedulingResult, wl: Workload, cq_name: str | None) -> tuple[Shortage, ...]:
    assigner = _assigner(snapshot, result, cq_name)
    if assigner is None:
        return ()
    demand = workload_demand(wl)
    explained = assigner.assign(demand, demand.full_counts(), explain=True)
    out = []
    for t in explained.attempts:
        if t.mode == FIT:
            continue
        if t.mode == NO_FLAVOR:
            out.append(Shortage(t.pod_set, t.resource, t.flavor, "", "", "", t.note or "not eligible"))
            continue
        short = max(0, t.needed - max(t.available, 0))
        note = "" if t.needed <= t.potential else "more than the ClusterQueue can ever use"
        out.append(
            Shortage(
                t.pod_set,
                t.resource,
                t.flavor,
                amount(t.resource, t.needed),
                amount(t.resource, max(t.available, 0)),
                amount(t.resource, short),
                note,
            )
        )
    return tuple(out)
