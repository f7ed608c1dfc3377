"""Fair-sharing preemption: which admitted workloads to evict, in which order, so that a pending one fits.

Owns: ``find_fair_victims`` and the order in which it visits target ClusterQueues.
Must not: commit anything: it simulates on the pass's future ``QuotaBook`` and leaves it exactly as it found it.

Kueue's rules (``pkg/scheduler/preemption/preemption.go`` ``fairPreemptions`` and ``preemption/fairsharing``),
in our words:

* candidates: the preemptor's own queue's workloads its ``withinClusterQueue`` policy allows, and, unless
  ``reclaimWithinCohort`` is Never, the workloads that policy allows in every other queue of the tree that
  borrows, when the search starts, in a flavor-resource where the preemptor is short; only workloads using such
  a flavor-resource count;
* every share below includes the preemptor's workload, added to its queue for the whole search;
* target order: walk down from the root, at each cohort into the child with the highest share (a cohort wins a
  tie with a queue; between queues the one whose next candidate goes first); a queue is left out once it has no
  candidates or (unless it is the preemptor's) no longer borrows, a cohort once it no longer borrows (unless it
  is on the preemptor's path) or all its children are left out. So the preemptor's own queue is visited when
  its share is the highest, not last;
* a victim in the preemptor's queue, or any victim while the preemptor stays within its nominal quota in the
  short resources (Kueue's ``FairSharingPreemptWithinNominal``, on by default), needs no strategy;
* otherwise the first strategy decides per victim, comparing shares at the level just below where the two
  branches meet: ``LessThanOrEqualToFinalShare`` (preemptor's share <= target's share without the victim) or
  ``LessThanInitialShare`` (preemptor's share < target's share now); after each victim the target is chosen
  again. Victims the first strategy refused are tried with ``LessThanInitialShare`` when it is configured
  second, at most one victim per queue;
* once the preemptor fits, every victim but the last is given back if it still fits without it (newest
  choice first) and, unlike Kueue, if that does not raise the preemptor's share above what a strategy passed on.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence

from webhook.api import constants
from webhook.core.fairsharing import INFINITE, LESS_THAN_INITIAL_SHARE, Shares, branches
from webhook.core.preemption import Holder, Preemptor, candidate_order, fits, reclaim_allows, within_queue_allows
from webhook.core.quota import CohortQuota, QueueQuota, QuotaBook, QuotaNode

# Evict this victim for this reason (in the simulation); whether the preemptor fits now.
_Take = Callable[[Holder, str, tuple[QuotaNode, tuple[float, float]] | None], bool]


def find_fair_victims(
    book: QuotaBook,
    shares: Shares,
    preemptor: Preemptor,
    holders_by_queue: Mapping[str, Sequence[Holder]],
    pool_queues: Sequence[str],
    taken: Container[tuple[str, str]],
    strategies: Sequence[str],
) -> list[tuple[Holder, str]] | None:
    """Victims (with Kueue reasons) that make room for ``preemptor`` under fair sharing, or None.

    ``book`` is the pass's future book, as for ``find_victims``; it is left exactly as it was found.
    """
    quota = book.queues[preemptor.cluster_queue.name]
    # 1. The candidates, by queue: the preemptor's own and, when it may reclaim, those of queues that borrow.
    candidates = _candidates(book, preemptor, holders_by_queue, pool_queues, taken)
    if not candidates:
        return None
    removed: list[tuple[Holder, str]] = []
    relied: list[tuple[QuotaNode, tuple[float, float]]] = []  # the preemptor's side and share a strategy passed on

    def take(h: Holder, reason: str, mine: tuple[QuotaNode, tuple[float, float]] | None = None) -> bool:
        book.queues[h.cluster_queue].add(h.usage, -1)
        removed.append((h, reason))
        if mine is not None:
            relied.append(mine)
        quota.add(preemptor.usage, -1)  # the check is without the preemptor's own usage, which is simulated
        ok = fits(quota, preemptor.usage, borrow=True)
        quota.add(preemptor.usage, 1)
        return ok

    # 2. The search, with the incoming workload in every share: the first strategy, then the second on what the
    #    first refused.
    quota.add(preemptor.usage, 1)
    try:
        found, retry = _first_strategy(book, shares, preemptor, candidates, strategies[0], take)
        if not found and len(strategies) > 1 and strategies[1] == LESS_THAN_INITIAL_SHARE:
            found = _second_strategy(book, shares, preemptor, retry, take)
    finally:
        quota.add(preemptor.usage, -1)
    # 3. Every victim not needed after all given back; the book restored as it was found.
    chosen = _given_back(book, shares, preemptor, removed, relied) if found else list(removed)
    for h, _ in chosen:
        book.queues[h.cluster_queue].add(h.usage, 1)
    return chosen if found else None


def _candidates(
    book: QuotaBook,
    preemptor: Preemptor,
    holders_by_queue: Mapping[str, Sequence[Holder]],
    pool_queues: Sequence[str],
    taken: Container[tuple[str, str]],
) -> dict[str, list[Holder]]:
    """The workloads the preemptor may evict, by queue, among those using a flavor-resource where it is short."""
    cq = preemptor.cluster_queue
    short = preemptor.short

    def useful(h: Holder) -> bool:
        return h.key not in taken and any(fr in short for fr in h.usage)

    candidates: dict[str, list[Holder]] = {}
    own = [h for h in holders_by_queue.get(cq.name, ()) if useful(h)]
    own = [h for h in own if within_queue_allows(cq.preemption.within_cluster_queue, preemptor, h)]
    if own:
        candidates[cq.name] = own
    reclaim = cq.preemption.reclaim_within_cohort
    if book.queues[cq.name].parent is None or reclaim == "Never":
        return candidates
    for name in pool_queues:
        node = book.queues[name]
        if name == cq.name or not any(node.borrowing(fr) for fr in short):
            continue  # nothing to reclaim from a queue within its own quota
        listed = [h for h in holders_by_queue.get(name, ()) if useful(h) and reclaim_allows(reclaim, preemptor, h)]
        if listed:
            candidates[name] = listed
    return candidates


def _given_back(
    book: QuotaBook,
    shares: Shares,
    preemptor: Preemptor,
    removed: Sequence[tuple[Holder, str]],
    relied: Sequence[tuple[QuotaNode, tuple[float, float]]],
) -> list[tuple[Holder, str]]:
    """The victims still needed once the preemptor fits: every one but the last is given back, newest first, if the
    preemptor still fits (and stays as fair as the strategies relied on) without it. Leaves the chosen ones out of
    ``book``, as the search did."""
    quota = book.queues[preemptor.cluster_queue.name]
    chosen = list(removed)
    for h, reason in reversed(removed[:-1]):
        book.queues[h.cluster_queue].add(h.usage, 1)
        if fits(quota, preemptor.usage, borrow=True) and _still_fair(shares, quota, preemptor, relied):
            chosen.remove((h, reason))
        else:
            book.queues[h.cluster_queue].add(h.usage, -1)
    return chosen


def _still_fair(
    shares: Shares, quota: QueueQuota, preemptor: Preemptor, relied: Sequence[tuple[QuotaNode, tuple[float, float]]]
) -> bool:
    """Whether the preemptor's share, with its workload, is still at most what every strategy decision relied on.

    Deliberately stricter than Kueue, whose give-back can return a victim of the preemptor's own queue after a
    fair-sharing victim was taken on the strength of that room, leaving the preemptor above the share the strategy
    allowed (found by the property test)."""
    if not relied:
        return True
    quota.add(preemptor.usage, 1)
    try:
        return all(drs(shares, node) <= share for node, share in relied)
    finally:
        quota.add(preemptor.usage, -1)


def _first_strategy(
    book: QuotaBook,
    shares: Shares,
    preemptor: Preemptor,
    candidates: dict[str, list[Holder]],
    strategy: str,
    take: _Take,
) -> tuple[bool, dict[str, list[Holder]]]:
    """The first strategy; also the candidates it refused, by queue, for the second."""
    quota = book.queues[preemptor.cluster_queue.name]
    within_nominal = all(quota.usage.get(fr, 0) <= quota.nominal.get(fr, 0) for fr in preemptor.short)
    retry: dict[str, list[Holder]] = {}
    order = TargetOrder(book, shares, quota, candidates)
    while (target := order.next()) is not None:
        listed = candidates[target]
        if target == quota.name:
            if take(listed.pop(0), constants.PREEMPTED_IN_CLUSTER_QUEUE, None):
                return True, retry
            continue
        if within_nominal:
            if take(listed.pop(0), constants.PREEMPTED_IN_COHORT_RECLAMATION, None):
                return True, retry
            continue
        mine, theirs = _almost_lcas(quota, book.queues[target])
        preemptor_share, target_before = drs(shares, mine), drs(shares, theirs)
        if preemptor_share[0] == INFINITE and target_before[0] != INFINITE:  # no victim here can pass either strategy
            retry.setdefault(target, []).extend(listed)
            listed.clear()
            continue
        victim_queue = book.queues[target]
        while listed:
            h = listed.pop(0)
            victim_queue.add(h.usage, -1)
            target_after = drs(shares, theirs)
            victim_queue.add(h.usage, 1)
            passed = (
                preemptor_share <= target_after
                if strategy != LESS_THAN_INITIAL_SHARE
                else preemptor_share < target_before
            )
            if passed:
                if take(h, constants.PREEMPTED_IN_COHORT_FAIR_SHARING, (mine, preemptor_share)):
                    return True, retry
                break  # shares moved: choose the target again
            retry.setdefault(target, []).append(h)
    return False, retry


def _second_strategy(
    book: QuotaBook, shares: Shares, preemptor: Preemptor, retry: dict[str, list[Holder]], take: _Take
) -> bool:
    """Rule S2-b on what the first strategy refused: it does not depend on the victim, so one per queue."""
    quota = book.queues[preemptor.cluster_queue.name]
    order = TargetOrder(book, shares, quota, retry)
    while (target := order.next()) is not None:
        mine, theirs = _almost_lcas(quota, book.queues[target])
        h = retry[target].pop(0)
        share = drs(shares, mine)
        if share < drs(shares, theirs) and take(h, constants.PREEMPTED_IN_COHORT_FAIR_SHARING, (mine, share)):
            return True
        order.drop(target)
    return False


def drs(shares: Shares, node: QuotaNode) -> tuple[float, float]:
    """A node's share as Kueue's ``CompareDRS`` orders them: by weighted share; among infinite ones (a weight of
    0 while borrowing), by the unweighted share."""
    share = shares.share(node)
    return share, shares.dominant(node) if share == INFINITE else 0.0


def _almost_lcas(mine: QueueQuota, theirs: QueueQuota) -> tuple[QuotaNode, QuotaNode]:
    pair = branches(mine, theirs)
    assert pair is not None, "a target outside the preemptor's tree"
    return pair


class TargetOrder:
    """Kueue's ``TargetClusterQueueOrdering``: the next queue to take a victim from, walking down the tree."""

    def __init__(self, book: QuotaBook, shares: Shares, quota: QueueQuota, candidates: Mapping[str, list[Holder]]):
        self.book, self.shares, self.quota, self.candidates = book, shares, quota, candidates
        self.path: set[int] = set()
        node = quota.parent
        while node is not None:
            self.path.add(id(node))
            node = node.parent
        self.pruned: set[int] = set()

    def drop(self, name: str) -> None:
        self.pruned.add(id(self.book.queues[name]))

    def next(self) -> str | None:
        quota = self.quota
        if quota.parent is None:
            return quota.name if id(quota) not in self.pruned and self.candidates.get(quota.name) else None
        root = quota.root
        while id(root) not in self.pruned:
            assert isinstance(root, CohortQuota)
            found = self._walk(root)
            if found is not None:
                return found
        return None

    def _walk(self, cohort: QuotaNode) -> str | None:
        best_queue: tuple[tuple[float, float], QueueQuota] | None = None
        best_cohort: tuple[tuple[float, float], QuotaNode] | None = None
        for child in cohort.children:
            if id(child) in self.pruned:
                continue
            borrowing = any(u > child.subtree.get(fr, 0) for fr, u in child.usage.items())
            key = drs(self.shares, child)
            if isinstance(child, QueueQuota):
                if (not borrowing and child is not self.quota) or not self.candidates.get(child.name):
                    self.pruned.add(id(child))
                elif best_queue is None or self._before(key, child, best_queue):
                    best_queue = key, child
            elif not borrowing and id(child) not in self.path:
                self.pruned.add(id(child))
            elif best_cohort is None or key >= best_cohort[0]:
                best_cohort = key, child
        if best_queue is None and best_cohort is None:
            self.pruned.add(id(cohort))
            return None
        if best_cohort is not None and (best_queue is None or best_cohort[0] >= best_queue[0]):
            return self._walk(best_cohort[1])  # on a tie the cohort: the least fair node inside it is chosen
        assert best_queue is not None
        return best_queue[1].name

    def _before(self, key: tuple[float, float], a: QueueQuota, best: tuple[tuple[float, float], QueueQuota]) -> bool:
        """Whether queue ``a`` goes before the best so far: a higher share, or an equal one and a next candidate
        that would be preempted first (Kueue's candidate ordering)."""
        if key != best[0]:
            return key > best[0]
        ha, hb = self.candidates[a.name][0], self.candidates[best[1].name][0]
        own = self.quota.name
        return (ha.cluster_queue == own, candidate_order(ha)) < (hb.cluster_queue == own, candidate_order(hb))
