"""What a Workload asks for, reduced to integers once: per pod set, per resource, in nano-units.

Owns: ``Demand`` and ``PodSetDemand`` (built from ``webhook.api.workload.Workload``), which double as the
"shape" key under which the scheduler remembers answers for identical workloads within one pass.
Must not: look at quota.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.api.flavor import Toleration
from webhook.api.workload import PodSet, Workload


@dataclass(frozen=True, slots=True)
class PodSetDemand:
    name: str
    count: int
    min_count: int | None
    per_pod: tuple[tuple[str, int], ...]  # (resource, nano-units per pod), zero requests dropped, sorted
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class Demand:
    """A workload's demand. Interned by ``DemandCache``: equal demands are one object, so identity is equality
    (and hashing stays in C on the scheduler's hot path)."""

    pod_sets: tuple[PodSetDemand, ...]

    @property
    def partial_index(self) -> int | None:
        """The pod set that may shrink (Kueue allows minCount on one pod set only), if any."""
        return next((i for i, p in enumerate(self.pod_sets) if p.min_count is not None and p.min_count < p.count), None)

    def full_counts(self) -> tuple[int, ...]:
        return tuple(p.count for p in self.pod_sets)


def pod_set_demand(pod_set: PodSet) -> PodSetDemand:
    return PodSetDemand(
        name=pod_set.name,
        count=pod_set.count,
        min_count=pod_set.min_count,
        per_pod=tuple(sorted((r, q.nano) for r, q in pod_set.requests.items() if q.nano != 0)),
        node_selector=tuple(sorted(pod_set.node_selector.items())),
        tolerations=pod_set.tolerations,
    )


class DemandCache:
    """Builds each distinct demand once; thousands of identical workloads share one ``Demand``.

    It may be kept from pass to pass (``schedule(demands=...)``): a Workload read once and unchanged since keeps
    its ``pod_sets`` tuple, whose demand is then found by identity, without building its key again.
    """

    def __init__(self) -> None:
        self._by_key: dict[tuple[object, ...], Demand] = {}
        # id(pod_sets) -> (pod_sets, demand): the tuple is held, so its id cannot be reused while it is here.
        self._by_pod_sets: dict[int, tuple[tuple[PodSet, ...], Demand]] = {}

    def __len__(self) -> int:
        return len(self._by_pod_sets)

    def of(self, workload: Workload) -> Demand:
        pod_sets = workload.pod_sets
        hit = self._by_pod_sets.get(id(pod_sets))
        if hit is not None and hit[0] is pod_sets:
            return hit[1]
        key = tuple(
            (
                p.name,
                p.count,
                p.min_count,
                tuple(sorted((r, q.nano) for r, q in p.requests.items() if q.nano != 0)),
                tuple(sorted(p.node_selector.items())) if p.node_selector else (),
                p.tolerations,
            )
            for p in workload.pod_sets
        )
        demand = self._by_key.get(key)
        if demand is None:
            demand = self._by_key[key] = Demand(tuple(PodSetDemand(*k) for k in key))
        self._by_pod_sets[id(pod_sets)] = (pod_sets, demand)
        return demand


def workload_demand(workload: Workload) -> Demand:
    return Demand(tuple(pod_set_demand(p) for p in workload.pod_sets))


def total_requests(demand: Demand, counts: tuple[int, ...] | None = None) -> dict[str, int]:
    """Sum over pod sets of count * per-pod requests, per resource (nano-units)."""
    counts = counts or demand.full_counts()
    out: dict[str, int] = {}
    for pod_set, count in zip(demand.pod_sets, counts, strict=True):
        for resource, nano in pod_set.per_pod:
            out[resource] = out.get(resource, 0) + nano * count
    return out
