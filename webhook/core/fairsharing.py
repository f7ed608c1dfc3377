"""Fair sharing: dominant resource shares over the cohort tree, the admission tournament and fair preemption.

Owns: ``FairSharing`` (Kueue's ``fairSharing`` configuration: on/off and the preemption strategies), ``Shares``
(each node's weighted dominant resource share, with or without a workload's usage) and the tournament that picks
which ClusterQueue's head goes next. The victim search is ``webhook.core.fairpreemption``.
Must not: change the book, or read anything but the book.

Kueue's rules (``pkg/cache/scheduler/fair_sharing.go``, ``pkg/scheduler/fair_sharing_iterator.go``), in our words:

* a node with a parent *borrows* in a flavor-resource what its usage exceeds its subtree quota by; per resource
  name the borrowed amounts of all flavors add up, and are compared, in thousandths, with what the parent could
  lend at most in that resource (its potential, summed over flavors); the largest ratio is the node's dominant
  resource share, divided by its ``fairSharing.weight`` (a weight of 0 with anything borrowed is infinite);
* admission: at every cohort, among the children that have a head to offer, a child that would not borrow from
  that cohort goes first, then the one whose share would be lowest after admitting that head, then higher
  priority, then older; the winner climbs to the root.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

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

# (queue, usage if its head is admitted, the head's order: priority, age, uid...)
Candidate = tuple[str, Mapping[FlavorResource, int], tuple[object, ...]]
# A candidate with what its usage adds to each node on its path (by node id): less than the usage above a node
# whose lending limit keeps part of it.
_Offered = tuple[Candidate, dict[int, dict[FlavorResource, int]]]


def lifted(queue: QuotaNode, usage: Mapping[FlavorResource, int]) -> dict[int, dict[FlavorResource, int]]:
    """What adding ``usage`` to ``queue`` adds to the usage of it and each ancestor (as ``QuotaNode.add`` does)."""
    out: dict[int, dict[FlavorResource, int]] = {}
    node: QuotaNode | None = queue
    pending = dict(usage)
    while node is not None and pending:
        out[id(node)] = pending
        parent = node.parent
        passed: dict[FlavorResource, int] = {}
        if parent is not None:
            for fr, delta in pending.items():
                if fr not in node.subtree:
                    continue
                kept, before = node.guaranteed.get(fr, 0), node.usage.get(fr, 0)
                up = max(0, before + delta - kept) - max(0, before - kept)
                if up:
                    passed[fr] = up
        node, pending = parent, passed
    return out


class Tournament:
    """Kueue's tournament, kept up to date: offering a queue's new head re-runs only its path to the root.

    At every cohort, among the children with a head to offer: first a child that would not borrow from this
    cohort, in the resources the head asks for (Kueue's ``FairSharingPrioritizeNonBorrowing``, on by default:
    applied at each level, it prefers heads served lower in the tree); then the child whose share would be
    lowest with that head; then priority and age.

    A head's usage (which flavors it would take) is the one computed when it was offered; the scheduler assigns
    it afresh before admitting it, so a stale estimate can only change the order, never what fits.
    """

    def __init__(self, shares: Shares) -> None:
        self.shares = shares
        self._candidate: dict[int, _Offered] = {}
        self._winner: dict[int, _Offered | None] = {}  # per node, while nothing below it changed
        self._key: dict[int, tuple[bool, float, tuple[object, ...]]] = {}  # per child node with a winner, likewise
        self._roots: dict[int, QuotaNode] = {}

    def offer(self, queue: str, candidate: Candidate | None) -> None:
        """``queue``'s head is now ``candidate`` (None: it has nothing to offer), or its usage changed."""
        node: QuotaNode | None = self.shares.book.queues[queue]
        assert node is not None
        if candidate is None:
            self._candidate.pop(id(node), None)
        else:
            self._candidate[id(node)] = (candidate, lifted(node, candidate[1]))
        while node is not None:
            self._winner.pop(id(node), None)
            self._key.pop(id(node), None)
            if node.parent is None:
                self._roots[id(node)] = node
            node = node.parent

    def winners(self) -> list[str]:
        """One queue per tree, sorted by name: whose head goes next there."""
        out = []
        for root in self._roots.values():
            best = self._best(root)
            if best is not None:
                out.append(best[0][0])
        return sorted(out)

    def _best(self, node: QuotaNode) -> _Offered | None:
        key = id(node)
        if key in self._winner:
            return self._winner[key]
        best: _Offered | None = self._candidate.get(key)
        if best is None and node.children:
            best_key: tuple[bool, float, tuple[object, ...]] | None = None
            for child in node.children:
                offered = self._best(child)
                if offered is None:
                    continue
                child_key = self._key.get(id(child))
                if child_key is None:  # only the children on a changed path are computed again
                    (_, usage, order), extras = offered
                    extra = extras.get(id(child), {})
                    child_key = (_borrows_on(child, extra, usage), self.shares.share(child, extra), order)
                    self._key[id(child)] = child_key
                if best_key is None or child_key < best_key:
                    best_key, best = child_key, offered
        self._winner[key] = best
        return best


def _borrows_on(node: QuotaNode, extra: Mapping[FlavorResource, int], requested: Mapping[FlavorResource, int]) -> bool:
    """Whether ``node``, with ``extra`` added, uses more than its subtree quota in a resource the head asks for."""
    usage, subtree = node.usage, node.subtree
    return any(
        amount > 0 and fr in subtree and usage.get(fr, 0) + extra.get(fr, 0) > subtree[fr]
        for fr, amount in requested.items()
    )
