"""Preemption: which admitted workloads to evict so that a pending one fits, and under which Kueue reason.

Owns: ``Holder`` (a workload that holds quota at the start of the pass), the candidate policies
(``withinClusterQueue``, ``reclaimWithinCohort``, ``borrowWithinCohort``) and the minimal victim search.
Must not: commit anything: it simulates on the ``QuotaBook`` and leaves it exactly as it found it.

Rules, in our words:

* only workloads using a flavor-resource where the preemptor is short are candidates;
* another queue's workload is a candidate only while that queue borrows in such a flavor-resource;
* first try without the preemptor borrowing (own-queue victims + cohort reclamation), then, if allowed, while
  borrowing (own-queue victims + ``borrowWithinCohort`` victims);
* candidates are taken other-queues-first, lowest priority first, most recently admitted first, until the
  preemptor fits; then every victim that is not needed after all is given back (newest choice first);
* if removing every candidate would still not make room, nothing is preempted.

No cycles: every policy demands strictly lower priority, or equal priority and newer (a strict order), or
reclaims quota the preemptor's queue owns, which the victim's queue cannot reclaim back.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from webhook.api import constants
from webhook.api.clusterqueue import ANY, LOWER_OR_NEWER_EQUAL_PRIORITY, LOWER_PRIORITY, NEVER, ClusterQueue
from webhook.core.quota import FlavorResource, QueueQuota, QuotaBook


@dataclass(frozen=True, slots=True)
class Holder:
    key: tuple[str, str]
    uid: str
    cluster_queue: str
    priority: int
    created: datetime
    reserved_at: datetime
    usage: Mapping[FlavorResource, int]


@dataclass(frozen=True, slots=True)
class Preemptor:
    cluster_queue: ClusterQueue
    priority: int
    created: datetime
    usage: Mapping[FlavorResource, int]
    short: frozenset[FlavorResource]


def within_queue_allows(policy: str, preemptor: Preemptor, h: Holder) -> bool:
    if policy == LOWER_PRIORITY:
        return h.priority < preemptor.priority
    if policy == LOWER_OR_NEWER_EQUAL_PRIORITY:
        return h.priority < preemptor.priority or (h.priority == preemptor.priority and h.created > preemptor.created)
    return False


def reclaim_allows(policy: str, preemptor: Preemptor, h: Holder) -> bool:
    return policy == ANY or (policy == LOWER_PRIORITY and h.priority < preemptor.priority)


def borrow_allows(cq: ClusterQueue, preemptor: Preemptor, h: Holder) -> bool:
    p = cq.preemption
    if p.borrow_within_cohort != LOWER_PRIORITY or not reclaim_allows(p.reclaim_within_cohort, preemptor, h):
        return False
    threshold = p.borrow_max_priority_threshold
    return h.priority < preemptor.priority and (threshold is None or h.priority <= threshold)


def fits(quota: QueueQuota, usage: Mapping[FlavorResource, int], *, borrow: bool) -> bool:
    for fr, val in usage.items():
        if val > quota.available(fr):
            return False
        if not borrow and quota.usage.get(fr, 0) + val > quota.nominal.get(fr, 0):
            return False
    return True


def candidate_order(h: Holder) -> tuple[int, float, str, tuple[str, str]]:
    """Lowest priority first, then most recently admitted, then a stable tie-break."""
    return (h.priority, -h.reserved_at.timestamp(), h.uid, h.key)


def find_victims(
    book: QuotaBook,
    preemptor: Preemptor,
    holders_by_queue: Mapping[str, Sequence[Holder]],
    pool_queues: Sequence[str],
    taken: Container[tuple[str, str]],
) -> list[tuple[Holder, str]] | None:
    """A minimal list of (victim, Kueue reason), or None when preemption cannot make the preemptor fit.

    ``book`` must be the pass's *future* book: usage once every victim chosen so far is gone and its
    preemptor is in. ``holders_by_queue`` lists each queue's holders in candidate order (see ``candidate_order``);
    ``pool_queues`` are the queues whose holders may be reclaimed (the cohort); ``taken`` are victims already
    chosen in this pass, never chosen twice.
    """
    cq = preemptor.cluster_queue
    quota = book.queues[cq.name]
    short = preemptor.short

    def useful(h: Holder) -> bool:
        return h.key not in taken and any(fr in short for fr in h.usage)

    policy = cq.preemption.within_cluster_queue
    own = [h for h in holders_by_queue.get(cq.name, ()) if useful(h) and within_queue_allows(policy, preemptor, h)]
    others: list[Holder] = []
    for name in pool_queues:
        q = book.queues[name]
        # Only a queue that borrows in what we are short of can be reclaimed from.
        if name != cq.name and any(q.usage.get(fr, 0) > q.nominal.get(fr, 0) for fr in short):
            others.extend(h for h in holders_by_queue.get(name, ()) if useful(h))
    others.sort(key=candidate_order)
    reclaim = cq.preemption.reclaim_within_cohort
    plans: list[tuple[list[Holder], bool, str]] = []
    if own or reclaim != NEVER:
        cands = [h for h in others if reclaim_allows(reclaim, preemptor, h)]
        plans.append((cands + own, False, constants.PREEMPTED_IN_COHORT_RECLAMATION))
    if own or cq.preemption.borrow_within_cohort != NEVER:
        cands = [h for h in others if borrow_allows(cq, preemptor, h)]
        plans.append((cands + own, True, constants.PREEMPTED_IN_COHORT_RECLAIM_WHILE_BORROWING))
    for candidates, borrow, cohort_reason in plans:
        chosen = _greedy(book, quota, preemptor, candidates, borrow=borrow)
        if chosen is not None:
            return [
                (h, constants.PREEMPTED_IN_CLUSTER_QUEUE if h.cluster_queue == cq.name else cohort_reason)
                for h in chosen
            ]
    return None


def _greedy(
    book: QuotaBook, quota: QueueQuota, preemptor: Preemptor, candidates: list[Holder], *, borrow: bool
) -> list[Holder] | None:
    removed: list[Holder] = []
    found = False
    for h in candidates:
        victim_queue = book.queues[h.cluster_queue]
        if victim_queue is not quota and not any(
            victim_queue.usage.get(fr, 0) > victim_queue.nominal.get(fr, 0) for fr in h.usage if fr in preemptor.short
        ):
            continue  # that queue no longer borrows what we need: its quota is its own
        victim_queue.add(h.usage, -1)
        removed.append(h)
        if fits(quota, preemptor.usage, borrow=borrow):
            found = True
            break
    chosen = list(removed)
    if found:
        # Give back every victim that turns out not to be needed, most recently chosen first.
        for h in reversed(removed[:-1]):
            book.queues[h.cluster_queue].add(h.usage, 1)
            if fits(quota, preemptor.usage, borrow=borrow):
                chosen.remove(h)
            else:
                book.queues[h.cluster_queue].add(h.usage, -1)
    for h in chosen:
        book.queues[h.cluster_queue].add(h.usage, 1)
    return chosen if found else None
