"""Fair sharing: dominant resource shares over the cohort tree, the admission tournament and fair preemption.

Owns: ``FairSharing`` (Kueue's ``fairSharing`` configuration: on/off and the preemption strategies), ``Shares``
(each node's weighted dominant resource share, with or without a workload's usage), the tournament that picks
which ClusterQueue's head goes next, and the fair-sharing victim search.
Must not: change the book except while simulating (always restored), or read anything but the book.

Kueue's rules (``pkg/cache/scheduler/fair_sharing.go``, ``pkg/scheduler/preemption/fairsharing``), in our words:

* a node with a parent *borrows* in a flavor-resource what its usage exceeds its subtree quota by; per resource
  name the borrowed amounts of all flavors add up, and are compared, in thousandths, with what the parent could
  lend at most in that resource (its potential, summed over flavors); the largest ratio is the node's dominant
  resource share, divided by its ``fairSharing.weight`` (a weight of 0 with anything borrowed is infinite);
* admission: at every cohort, among the children that have a head to offer, the one whose share would be lowest
  after admitting that head goes first (then higher priority, then older); the winner climbs to the root;
* preemption: target queues are visited from the highest share down (compared at the level just below where the
  preemptor's and the target's branches meet); a victim from another queue is taken only if the configured
  strategy allows: ``LessThanOrEqualToFinalShare`` (the preemptor's share with its workload is at most the
  target's share without the victim) or ``LessThanInitialShare`` (the preemptor's share with its workload is below
  the target's share with the victim); strategies are tried in the configured order. Victims in the preemptor's
  own queue, and any victim when the preemptor stays within its nominal quota, need no strategy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from webhook.api import constants
from webhook.core.preemption import Holder, Preemptor, fits, reclaim_allows, within_queue_allows
from webhook.core.quota import FlavorResource, QuotaBook, QuotaNode

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: Final = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE: Final = "LessThanInitialShare"
DEFAULT_STRATEGIES: Final = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
# The only lists Kueue accepts.
VALID_STRATEGY_LISTS: Final = (
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE),
)
INFINITE: Final = math.inf


@dataclass(frozen=True, slots=True)
class FairSharing:
    enabled: bool = False
    preemption_strategies: tuple[str, ...] = DEFAULT_STRATEGIES


def status_value(share: float) -> int:
    """``status.fairSharing.weightedShare``: the share rounded up, the largest int64 for an infinite one."""
    return 2**63 - 1 if share == INFINITE else math.ceil(share)


class Shares:
    """Weighted dominant resource shares of the nodes of one book (the book's usage is read live)."""

    def __init__(self, book: QuotaBook, weights: Mapping[str, Fraction], cohort_weights: Mapping[str, Fraction]):
        self.book = book
        self._weight: dict[int, Fraction] = {}
        self._lendable: dict[int, dict[str, int]] = {}
        self._frs: dict[int, dict[str, list[FlavorResource]]] = {}
        for name, node in book.queues.items():
            self._prepare(node, weights.get(name, Fraction(1)))
        for name, cohort in book.cohorts.items():
            self._prepare(cohort, cohort_weights.get(name, Fraction(1)))

    def _prepare(self, node: QuotaNode, weight: Fraction) -> None:
        key = id(node)
        self._weight[key] = weight
        parent = node.parent
        if parent is None:
            return
        lendable: dict[str, int] = {}
        for fr in parent.subtree:
            lendable[fr[1]] = lendable.get(fr[1], 0) + parent._most(fr)
        self._lendable[key] = lendable
        by_resource: dict[str, list[FlavorResource]] = {}
        for fr in node.subtree:
            by_resource.setdefault(fr[1], []).append(fr)
        self._frs[key] = by_resource

    def dominant(self, node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None, sign: int = 1) -> float:
        """The node's dominant resource share in thousandths (unweighted), with ``extra`` usage added."""
        key = id(node)
        lendable = self._lendable.get(key)
        if lendable is None:
            return 0.0  # a root borrows from nobody
        best = 0.0
        usage, subtree = node.usage, node.subtree
        for resource, frs in self._frs[key].items():
            borrowed = 0
            for fr in frs:
                used = usage.get(fr, 0)
                if extra is not None:
                    used += sign * extra.get(fr, 0)
                over = used - subtree[fr]
                if over > 0:
                    borrowed += over
            if borrowed and lendable.get(resource, 0) > 0:
                best = max(best, borrowed * 1000 / lendable[resource])
        return best

    def share(self, node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None, sign: int = 1) -> float:
        drs = self.dominant(node, extra, sign)
        if drs == 0:
            return 0.0
        weight = self._weight.get(id(node), Fraction(1))
        return INFINITE if weight == 0 else drs / float(weight)


def branches(a: QuotaNode, b: QuotaNode) -> tuple[QuotaNode, QuotaNode] | None:
    """The ancestors of ``a`` and ``b`` (themselves included) just below their lowest common ancestor."""
    path_a = [a]
    while path_a[-1].parent is not None:
        path_a.append(path_a[-1].parent)
    index = {id(n): i for i, n in enumerate(path_a)}
    below_b: QuotaNode = b
    node: QuotaNode | None = b
    while node is not None and id(node) not in index:
        below_b = node
        node = node.parent
    if node is None or node is b or node is a:
        return None  # different trees, or one contains the other
    return path_a[index[id(node)] - 1], below_b


def fair_note(shares: Shares, queue: QuotaNode, weight: Fraction, usage: Mapping[FlavorResource, int]) -> str:
    """Whose share decides, and how much: the queue's weighted share now and with the workload, and the highest
    share among the queues and cohorts it competes with (its siblings)."""
    now, then = shares.share(queue), shares.share(queue, usage)
    text = (
        f"fair sharing: ClusterQueue {queue.name} (weight {_number(weight)}) has weighted share {_shown(now)}, "
        f"{_shown(then)} with this workload"
    )
    parent = queue.parent
    if parent is not None:
        rivals = [(shares.share(n), n) for n in parent.children if n is not queue]
        if rivals:
            top, node = max(rivals, key=lambda r: (r[0], r[1].name))
            kind = (
                "ClusterQueue"
                if node.name in shares.book.queues and shares.book.queues[node.name] is node
                else "Cohort"
            )
            text += f"; highest in cohort {parent.name}: {kind} {node.name} at {_shown(top)}"
    return text


def _shown(share: float) -> str:
    return "infinite" if share == INFINITE else str(math.ceil(share))


def _number(weight: Fraction) -> str:
    return str(weight.numerator) if weight.denominator == 1 else f"{float(weight):g}"


# -- admission ------------------------------------------------------------------------------------------------

# (queue, usage if its head is admitted, whether that borrows, the head's order: priority, age, uid...)
Candidate = tuple[str, Mapping[FlavorResource, int], bool, tuple[object, ...]]


class Tournament:
    """Kueue's tournament, kept up to date: offering a queue's new head re-runs only its path to the root.

    A head's usage (which flavors it would take) is the one computed when it was offered; the scheduler assigns
    it afresh before admitting it, so a stale estimate can only change the order, never what fits.
    """

    def __init__(self, shares: Shares) -> None:
        self.shares = shares
        self._candidate: dict[int, Candidate] = {}
        self._winner: dict[int, Candidate | None] = {}  # per node, while nothing below it changed
        self._roots: dict[int, QuotaNode] = {}

    def offer(self, queue: str, candidate: Candidate | None) -> None:
        """``queue``'s head is now ``candidate`` (None: it has nothing to offer), or its usage changed."""
        node: QuotaNode | None = self.shares.book.queues[queue]
        assert node is not None
        if candidate is None:
            self._candidate.pop(id(node), None)
        else:
            self._candidate[id(node)] = candidate
        while node is not None:
            self._winner.pop(id(node), None)
            if node.parent is None:
                self._roots[id(node)] = node
            node = node.parent

    def winners(self) -> list[str]:
        """One queue per tree, sorted by name: whose head goes next there."""
        out = []
        for root in self._roots.values():
            best = self._best(root)
            if best is not None:
                out.append(best[0])
        return sorted(out)

    def _best(self, node: QuotaNode) -> Candidate | None:
        key = id(node)
        if key in self._winner:
            return self._winner[key]
        best: Candidate | None = self._candidate.get(key)
        if best is None and node.children:
            best_key: tuple[bool, float, tuple[object, ...]] | None = None
            for child in node.children:
                c = self._best(child)
                if c is None:
                    continue
                # Kueue's FairSharingPrioritizeNonBorrowing (on by default): a head that needs no borrowing goes
                # first; then the child whose share would be lowest with that head; then priority and age.
                child_key = (c[2], self.shares.share(child, c[1]), c[3])
                if best_key is None or child_key < best_key:
                    best_key, best = child_key, c
        self._winner[key] = best
        return best


# -- preemption -----------------------------------------------------------------------------------------------


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
    cq = preemptor.cluster_queue
    quota = book.queues[cq.name]
    short = preemptor.short

    def useful(h: Holder) -> bool:
        return h.key not in taken and any(fr in short for fr in h.usage)

    own_policy = cq.preemption.within_cluster_queue
    reclaim = cq.preemption.reclaim_within_cohort
    candidates: dict[str, list[Holder]] = {}
    for name in pool_queues:
        if name == cq.name:
            listed = [h for h in holders_by_queue.get(name, ()) if useful(h)]
            listed = [h for h in listed if within_queue_allows(own_policy, preemptor, h)]
        elif reclaim != "Never":
            listed = [h for h in holders_by_queue.get(name, ()) if useful(h) and reclaim_allows(reclaim, preemptor, h)]
        else:
            listed = []
        if listed:
            candidates[name] = listed

    removed: list[Holder] = []
    reasons: dict[tuple[str, str], str] = {}
    found = False
    for strategy in strategies:
        allows = _strategy(strategy)
        skipped: set[str] = set()
        while not found:
            target = _next_target(book, shares, quota, candidates, skipped, short)
            if target is None:
                break
            victim_queue = book.queues[target]
            h = candidates[target][0]
            if target == cq.name:
                reason = constants.PREEMPTED_IN_CLUSTER_QUEUE
            elif _within_nominal(quota, preemptor.usage):
                reason = constants.PREEMPTED_IN_COHORT_RECLAMATION
            else:
                pair = branches(quota, victim_queue)
                if pair is None:
                    skipped.add(target)
                    continue
                mine, theirs = pair
                own_share = shares.share(mine, preemptor.usage)
                if not allows(own_share, shares.share(theirs), shares.share(theirs, h.usage, -1)):
                    skipped.add(target)
                    continue
                reason = constants.PREEMPTED_IN_COHORT_FAIR_SHARING
            candidates[target].pop(0)
            if not candidates[target]:
                del candidates[target]
            victim_queue.add(h.usage, -1)
            removed.append(h)
            reasons[h.key] = reason
            found = fits(quota, preemptor.usage, borrow=True)
        if found:
            break
    chosen = list(removed)
    if found:
        for h in reversed(removed[:-1]):  # give back every victim not needed after all, newest choice first
            book.queues[h.cluster_queue].add(h.usage, 1)
            if fits(quota, preemptor.usage, borrow=True):
                chosen.remove(h)
            else:
                book.queues[h.cluster_queue].add(h.usage, -1)
    for h in chosen:
        book.queues[h.cluster_queue].add(h.usage, 1)
    return [(h, reasons[h.key]) for h in chosen] if found else None


def _strategy(name: str) -> Callable[[float, float, float], bool]:
    if name == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return lambda mine, before, after: mine <= after
    return lambda mine, before, after: mine < before


def _within_nominal(quota: QuotaNode, usage: Mapping[FlavorResource, int]) -> bool:
    return all(quota.usage.get(fr, 0) + v <= quota.nominal.get(fr, 0) for fr, v in usage.items())


def _next_target(
    book: QuotaBook,
    shares: Shares,
    quota: QuotaNode,
    candidates: Mapping[str, list[Holder]],
    skipped: Container[str],
    short: Container[FlavorResource],
) -> str | None:
    """The borrowing queue with the highest share (by name on a tie), then the preemptor's own queue."""
    best: tuple[float, str] | None = None
    for name in sorted(candidates):
        if name in skipped or name == quota.name:
            continue
        node = book.queues[name]
        if not any(node.borrowing(fr) for fr in node.usage if fr in short):
            continue  # its usage is its own quota: nothing to reclaim there
        pair = branches(quota, node)
        share = shares.share(pair[1]) if pair is not None else shares.share(node)
        if best is None or share > best[0]:
            best = (share, name)
    if best is not None:
        return best[1]
    return quota.name if quota.name in candidates and quota.name not in skipped else None
