"""Quota accounting: how much each ClusterQueue may use now, and at most, per flavor and resource.

Owns: ``QuotaBook``, the nominal quota, borrowing and lending limits of every ClusterQueue and the usage that
counts against them, aggregated per cohort. Amounts are integers in nano-units (see ``webhook.api.quantity``).
Must not: know about workloads, ordering or policies; callers add and remove usage.

Semantics follow Kueue's resource tree for a flat cohort (a cohort name shared by ClusterQueues):

* a queue's *guaranteed* quota is ``nominal - lendingLimit`` (0 without a lending limit): it is never lent;
* the cohort's pool is the sum of what its members may lend (``nominal - guaranteed``);
* usage beyond a queue's guaranteed part is drawn from the pool;
* a queue may draw from the pool at most its lendable part plus its ``borrowingLimit`` (unlimited if unset);
* without a cohort a queue can use exactly its nominal quota.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from webhook.api.clusterqueue import ClusterQueue

FlavorResource = tuple[str, str]  # (flavor, resource)


class CohortQuota:
    __slots__ = ("name", "pool", "usage", "version")

    def __init__(self, name: str) -> None:
        self.name = name
        self.pool: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.version = 0  # bumped on every usage change: lets the scheduler skip re-checks when nothing moved


class QueueQuota:
    __slots__ = ("borrowing_limit", "cohort", "guaranteed", "name", "nominal", "usage", "version")

    def __init__(self, name: str, cohort: CohortQuota | None) -> None:
        self.name = name
        self.cohort = cohort
        self.nominal: dict[FlavorResource, int] = {}
        self.borrowing_limit: dict[FlavorResource, int | None] = {}
        self.guaranteed: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.version = 0

    def pool_version(self) -> int:
        return self.cohort.version if self.cohort is not None else self.version

    def available(self, fr: FlavorResource) -> int:
        """What one more workload may take in ``fr`` right now (may be negative when over-reserved)."""
        nominal = self.nominal.get(fr)
        if nominal is None:
            return 0
        used = self.usage.get(fr, 0)
        cohort = self.cohort
        if cohort is None:
            return nominal - used
        guaranteed = self.guaranteed[fr]
        from_pool = cohort.pool[fr] - cohort.usage.get(fr, 0)
        limit = self.borrowing_limit[fr]
        if limit is not None:
            drawn = used - guaranteed if used > guaranteed else 0
            from_pool = min(from_pool, nominal - guaranteed - drawn + limit)
        return (guaranteed - used if guaranteed > used else 0) + (from_pool if from_pool > 0 else 0)

    def potential(self, fr: FlavorResource) -> int:
        """The most this queue could ever hold in ``fr`` with no other usage anywhere."""
        nominal = self.nominal.get(fr)
        if nominal is None:
            return 0
        cohort = self.cohort
        if cohort is None:
            return nominal
        most = self.guaranteed[fr] + cohort.pool[fr]
        limit = self.borrowing_limit[fr]
        return most if limit is None else min(most, nominal + limit)

    def lendable_by_cohort(self, fr: FlavorResource) -> int:
        """What the rest of the cohort has free to lend this queue in ``fr`` (ignoring this queue's limit)."""
        cohort = self.cohort
        if cohort is None or fr not in self.nominal:
            return 0
        used = self.usage.get(fr, 0)
        guaranteed = self.guaranteed[fr]
        own_in_pool = self.nominal[fr] - guaranteed
        drawn = used - guaranteed if used > guaranteed else 0
        others_free = cohort.pool[fr] - cohort.usage.get(fr, 0) - max(0, own_in_pool - drawn)
        return max(0, others_free)

    def add(self, usage: Mapping[FlavorResource, int], sign: int = 1) -> None:
        """Add (sign=1) or remove (sign=-1) usage, keeping the cohort's share in step."""
        cohort = self.cohort
        own = self.usage
        for fr, amount in usage.items():
            before = own.get(fr, 0)
            after = before + sign * amount
            own[fr] = after
            if cohort is not None and fr in self.guaranteed:
                g = self.guaranteed[fr]
                delta = max(0, after - g) - max(0, before - g)
                if delta:
                    cohort.usage[fr] = cohort.usage.get(fr, 0) + delta
        self.version += 1
        if cohort is not None:
            cohort.version += 1


class QuotaBook:
    """Every ClusterQueue's quota and usage, with cohorts; built once per scheduling pass."""

    def __init__(self, cluster_queues: Iterable[ClusterQueue]) -> None:
        self.queues: dict[str, QueueQuota] = {}
        self.cohorts: dict[str, CohortQuota] = {}
        for cq in cluster_queues:
            cohort = None
            if cq.cohort:
                cohort = self.cohorts.get(cq.cohort)
                if cohort is None:
                    cohort = self.cohorts[cq.cohort] = CohortQuota(cq.cohort)
            q = self.queues[cq.name] = QueueQuota(cq.name, cohort)
            for group in cq.resource_groups:
                for flavor in group.flavors:
                    for rq in flavor.resources:
                        fr = (flavor.name, rq.name)
                        nominal = rq.nominal.nano
                        lending = rq.lending_limit.nano if rq.lending_limit is not None else None
                        # A lending limit above nominal is rejected by validation; clamp rather than lend more.
                        guaranteed = max(0, nominal - lending) if lending is not None and cohort else 0
                        q.nominal[fr] = nominal
                        q.guaranteed[fr] = guaranteed
                        q.borrowing_limit[fr] = rq.borrowing_limit.nano if rq.borrowing_limit is not None else None
                        if cohort is not None:
                            cohort.pool[fr] = cohort.pool.get(fr, 0) + nominal - guaranteed
