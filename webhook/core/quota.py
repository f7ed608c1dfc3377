"""Quota accounting over the cohort tree: how much each ClusterQueue may use now, and at most.

Owns: ``QuotaBook``, the tree of ``QuotaNode``s (a ``QueueQuota`` per ClusterQueue, a ``CohortQuota`` per cohort,
named by a Cohort object or only by a ClusterQueue's ``cohortName``), each with its own quota, borrowing and
lending limits and the usage that counts against them, per flavor and resource; and cohort cycles, found once
when the tree is built. Amounts are integers in nano-units (see ``webhook.api.quantity``).
Must not: know about workloads, ordering or policies; callers add and remove usage.

Semantics follow Kueue's resource tree (``pkg/cache/scheduler/resource_node.go``), in our words:

* a node's *subtree quota* is its own nominal quota plus what each child puts into it: the child's subtree quota
  minus the part the child keeps for itself (``subtree - lendingLimit`` when a lending limit is set, else 0);
* usage of a node beyond the part it keeps is usage of its parent too, all the way to the root;
* what a node may take now is what it keeps and has free, plus what its parent may take now, capped by the
  node's ``borrowingLimit`` (what it holds in the parent, plus the limit, minus what it already draws there);
* the root may use exactly its subtree quota; a ClusterQueue without a cohort is a root of its own.

For a flat cohort (one level, no Cohort object) this is exactly the classic pool of lendable quota.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from webhook.api.clusterqueue import ClusterQueue, ResourceGroup
from webhook.api.cohort import Cohort

FlavorResource = tuple[str, str]  # (flavor, resource)


class QuotaNode:
    __slots__ = (
        "borrowing_limit",
        "children",
        "guaranteed",
        "height",
        "lending_limit",
        "name",
        "nominal",
        "parent",
        "subtree",
        "usage",
        "version",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.parent: CohortQuota | None = None
        self.children: list[QuotaNode] = []
        self.nominal: dict[FlavorResource, int] = {}  # quota this node owns itself
        self.borrowing_limit: dict[FlavorResource, int | None] = {}
        self.lending_limit: dict[FlavorResource, int | None] = {}
        self.subtree: dict[FlavorResource, int] = {}  # own nominal + what the children lend into it
        self.guaranteed: dict[FlavorResource, int] = {}  # kept for this subtree, never lent to the parent
        self.usage: dict[FlavorResource, int] = {}
        self.height = 0  # Kueue's height of a cohort: 1 above queues only, one more per level of cohorts below
        self.version = 0  # bumped on every usage change below: lets the scheduler skip re-checks

    @property
    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def pool_version(self) -> int:
        """Changes whenever usage anywhere in this node's tree changes."""
        return self.root.version

    def borrowing(self, fr: FlavorResource) -> bool:
        return self.usage.get(fr, 0) > self.subtree.get(fr, 0)

    def _free(self, fr: FlavorResource) -> int:
        sub = self.subtree.get(fr, 0)
        used = self.usage.get(fr, 0)
        parent = self.parent
        if parent is None:
            return sub - used
        kept = self.guaranteed.get(fr, 0)
        local = kept - used if kept > used else 0
        from_parent = parent._free(fr)
        limit = self.borrowing_limit.get(fr)
        if limit is not None:
            drawn = used - kept if used > kept else 0
            from_parent = min(from_parent, sub - kept - drawn + limit)
        return local + (from_parent if from_parent > 0 else 0)

    def _most(self, fr: FlavorResource) -> int:
        sub = self.subtree.get(fr, 0)
        parent = self.parent
        if parent is None:
            return sub
        most = self.guaranteed.get(fr, 0) + parent._most(fr)
        limit = self.borrowing_limit.get(fr)
        return most if limit is None else min(most, sub + limit)

    def add(self, usage: Mapping[FlavorResource, int], sign: int = 1) -> None:
        """Add (sign=1) or remove (sign=-1) usage, keeping every ancestor's share in step."""
        node: QuotaNode | None = self
        pending = dict(usage) if sign == 1 else {fr: -amount for fr, amount in usage.items()}
        while node is not None and pending:
            parent = node.parent
            passed: dict[FlavorResource, int] = {}
            own = node.usage
            for fr, delta in pending.items():
                before = own.get(fr, 0)
                after = before + delta
                own[fr] = after
                if parent is not None and fr in node.subtree:
                    kept = node.guaranteed.get(fr, 0)
                    up = max(0, after - kept) - max(0, before - kept)
                    if up:
                        passed[fr] = up
            node.version += 1
            node, pending = parent, passed
        while node is not None:  # nothing passed further up, but the tree changed: its root must notice
            node.version += 1
            node = node.parent


class CohortQuota(QuotaNode):
    __slots__ = ()


class QueueQuota(QuotaNode):
    __slots__ = ()

    @property
    def cohort(self) -> CohortQuota | None:
        return self.parent

    def available(self, fr: FlavorResource) -> int:
        """What one more workload may take in ``fr`` right now (negative when over-reserved without a cohort)."""
        if fr not in self.nominal:
            return 0
        return self._free(fr)

    def potential(self, fr: FlavorResource) -> int:
        """The most this queue could ever hold in ``fr`` with no other usage anywhere."""
        if fr not in self.nominal:
            return 0
        return self._most(fr)

    def borrowing_level(self, fr: FlavorResource, amount: int) -> int:
        """How far up the tree taking ``amount`` more of ``fr`` reaches, as Kueue ranks it: 0 within the queue's
        nominal quota, else the height of the lowest ancestor whose subtree holds it without borrowing itself
        (the root's height when none does). Lower is more local."""
        parent = self.parent
        if parent is None or self.usage.get(fr, 0) + amount <= self.nominal.get(fr, 0):
            return 0
        # What the queue keeps (lending limit) and has free is not seen by its parent.
        kept = self.guaranteed.get(fr, 0) - self.usage.get(fr, 0)
        remaining = amount - (kept if kept > 0 else 0)
        node: QuotaNode | None = parent
        while node is not None:
            if node.usage.get(fr, 0) + remaining <= node.subtree.get(fr, 0):
                return node.height
            kept = node.guaranteed.get(fr, 0) - node.usage.get(fr, 0)
            remaining -= kept if kept > 0 else 0
            node = node.parent
        return parent.root.height

    def lendable_by_cohort(self, fr: FlavorResource) -> int:
        """What the rest of the tree has free to lend this queue in ``fr`` (ignoring this queue's limit)."""
        parent = self.parent
        if parent is None or fr not in self.nominal:
            return 0
        used = self.usage.get(fr, 0)
        kept = self.guaranteed.get(fr, 0)
        own_in_parent = self.subtree.get(fr, 0) - kept
        drawn = used - kept if used > kept else 0
        return max(0, parent._free(fr) - max(0, own_in_parent - drawn))


def _set_quotas(node: QuotaNode, groups: Sequence[ResourceGroup]) -> None:
    for group in groups:
        for flavor in group.flavors:
            for rq in flavor.resources:
                fr = (flavor.name, rq.name)
                node.nominal[fr] = rq.nominal.nano
                node.borrowing_limit[fr] = rq.borrowing_limit.nano if rq.borrowing_limit is not None else None
                node.lending_limit[fr] = rq.lending_limit.nano if rq.lending_limit is not None else None


class QuotaBook:
    """Every ClusterQueue's and cohort's quota and usage, as one forest; built once per scheduling pass."""

    def __init__(self, cluster_queues: Iterable[ClusterQueue], cohorts: Iterable[Cohort] = ()) -> None:
        self.queues: dict[str, QueueQuota] = {}
        self.cohorts: dict[str, CohortQuota] = {}
        # Cohort name -> the cycle it is part of or hangs below, e.g. "a -> b -> a": its queues admit nothing.
        self.cycles: dict[str, str] = {}
        objects = {c.name: c for c in sorted(cohorts, key=lambda c: c.name)}
        for c in objects.values():
            _set_quotas(self._cohort(c.name), c.resource_groups)
        for c in objects.values():
            if c.parent:
                self._cohort(c.parent)
        self._link(objects)
        for cq in cluster_queues:
            q = self.queues[cq.name] = QueueQuota(cq.name)
            _set_quotas(q, cq.resource_groups)
            if cq.cohort:
                parent = self._cohort(cq.cohort)
                q.parent = parent
                parent.children.append(q)
        for node in self.cohorts.values():
            if node.parent is None:
                _sum_subtree(node)
        for q in self.queues.values():
            if q.parent is None:
                _sum_subtree(q)

    def _cohort(self, name: str) -> CohortQuota:
        node = self.cohorts.get(name)
        if node is None:
            node = self.cohorts[name] = CohortQuota(name)
        return node

    def _link(self, objects: Mapping[str, Cohort]) -> None:
        """Parent links, except those that would close a cycle: those cohorts are recorded in ``cycles``."""
        for name in objects:
            path: list[str] = []
            at: str | None = name
            while at is not None and at not in path and at not in self.cycles:
                path.append(at)
                obj = objects.get(at)
                at = obj.parent if obj is not None else None
            if at is None:
                continue
            if at in path:  # a new cycle: everything on the path reaches it
                loop = path[path.index(at) :]
                message = " -> ".join([*loop, at])
            else:
                message = self.cycles[at]
            for member in path:
                self.cycles.setdefault(member, message)
        for name, obj in objects.items():
            if obj.parent and name not in self.cycles:
                child, parent = self.cohorts[name], self.cohorts[obj.parent]
                child.parent = parent
                parent.children.append(child)

    def cycle_of(self, cq: ClusterQueue) -> str | None:
        """The cohort cycle that ``cq``'s tree is caught in, if any."""
        return self.cycles.get(cq.cohort) if cq.cohort else None

    def tree_of(self, name: str) -> str:
        """A name for the tree a ClusterQueue belongs to: its root cohort, or the queue itself."""
        root = self.queues[name].root
        return f"cohort/{root.name}" if isinstance(root, CohortQuota) else f"queue/{root.name}"


def _sum_subtree(node: QuotaNode) -> None:
    """Fill ``subtree`` and ``guaranteed`` bottom-up (children first) from the nodes' own quotas."""
    for child in node.children:
        _sum_subtree(child)
    if isinstance(node, CohortQuota):
        node.height = max(
            [1 if node.children else 0] + [c.height + 1 for c in node.children if isinstance(c, CohortQuota)]
        )
    subtree = dict(node.nominal)
    for child in node.children:
        for fr, amount in child.subtree.items():
            subtree[fr] = subtree.get(fr, 0) + amount - child.guaranteed.get(fr, 0)
    node.subtree = subtree
    has_parent = node.parent is not None
    for fr, amount in subtree.items():
        lending = node.lending_limit.get(fr)
        # A lending limit needs a parent to lend to (validation refuses it otherwise); without one, keep nothing back.
        node.guaranteed[fr] = max(0, amount - lending) if lending is not None and has_parent else 0
