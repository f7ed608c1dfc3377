"""Builders for scheduler tests: small functions that read like the scenario, never JSON blobs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from fractions import Fraction

from webhook.api import constants
from webhook.api.clusterqueue import (
    BEST_EFFORT_FIFO,
    NEVER,
    ClusterQueue,
    FlavorFungibility,
    FlavorQuotas,
    Preemption,
    ResourceGroup,
    ResourceQuota,
)
from webhook.api.cohort import Cohort
from webhook.api.flavor import ResourceFlavor
from webhook.api.localqueue import LocalQueue
from webhook.api.quantity import Quantity, parse_quantity
from webhook.api.selector import EVERYTHING
from webhook.api.workload import Admission, Condition, PodSet, PodSetAssignment, Workload
from webhook.core.snapshot import Snapshot

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(hours=1)
NS = "team"


def q(text: str | int) -> Quantity:
    return parse_quantity(text)


def flavor(name: str, **kw: object) -> ResourceFlavor:
    return ResourceFlavor(name, **kw)  # type: ignore[arg-type]


def quota(
    resource: str, nominal: str | int, *, borrowing: str | int | None = None, lending: str | int | None = None
) -> ResourceQuota:
    return ResourceQuota(
        resource,
        q(nominal),
        None if borrowing is None else q(borrowing),
        None if lending is None else q(lending),
    )


def group(*flavors: tuple[str, list[ResourceQuota]]) -> ResourceGroup:
    covered = tuple(r.name for r in flavors[0][1])
    return ResourceGroup(covered, tuple(FlavorQuotas(name, tuple(rs)) for name, rs in flavors))


def cluster_queue(
    name: str,
    *groups: ResourceGroup,
    cohort: str | None = None,
    strategy: str = BEST_EFFORT_FIFO,
    within: str = NEVER,
    reclaim: str = NEVER,
    borrow_within: str = NEVER,
    threshold: int | None = None,
    fungibility: FlavorFungibility | None = None,
    stop: str = "None",
    weight: int | Fraction = 1,
) -> ClusterQueue:
    return ClusterQueue(
        name=name,
        resource_groups=groups,
        cohort=cohort,
        queueing_strategy=strategy,
        namespace_selector=EVERYTHING,
        flavor_fungibility=fungibility or FlavorFungibility(),
        preemption=Preemption(within, reclaim, borrow_within, threshold),
        stop_policy=stop,
        weight=Fraction(weight),
    )


def cohort(name: str, *groups: ResourceGroup, parent: str | None = None, weight: int | Fraction = 1) -> Cohort:
    return Cohort(name, parent, groups, Fraction(weight))


def cpu_queue(name: str, nominal: str | int, *, flavor_name: str = "default", **kw: object) -> ClusterQueue:
    borrowing = kw.pop("borrowing", None)
    lending = kw.pop("lending", None)
    return cluster_queue(
        name,
        group((flavor_name, [quota("cpu", nominal, borrowing=borrowing, lending=lending)])),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def local_queue(cq: str, *, name: str | None = None, namespace: str = NS) -> LocalQueue:
    return LocalQueue(namespace, name or cq, cq)


def pod_set(name: str = "main", count: int = 1, *, min_count: int | None = None, **requests: str | int) -> PodSet:
    return PodSet(name, count, {_resource(k): q(v) for k, v in requests.items()}, min_count)


def _resource(key: str) -> str:
    return {"gpu": "nvidia.com/gpu"}.get(key, key)


def workload(
    name: str,
    *pod_sets: PodSet,
    queue: str = "main",
    priority: int = 0,
    age: int = 0,
    namespace: str = NS,
    cpu: str | int | None = None,
) -> Workload:
    """A pending workload; ``age`` seconds after T0 it was created (bigger = newer)."""
    sets = pod_sets or (pod_set(cpu=cpu if cpu is not None else 1),)
    return Workload(
        namespace=namespace,
        name=name,
        uid=f"uid-{name}",
        pod_sets=tuple(sets),
        queue_name=queue,
        priority=priority,
        created=T0 + timedelta(seconds=age),
    )


def admitted(wl: Workload, cq: str, *, flavor_name: str = "default", reserved_age: int = 0) -> Workload:
    """``wl`` as holding quota in ``cq``, every resource in ``flavor_name``."""
    assignments = tuple(
        PodSetAssignment(
            p.name, {r: flavor_name for r in p.requests}, {r: v * p.count for r, v in p.requests.items()}, p.count
        )
        for p in wl.pod_sets
    )
    cond = Condition(constants.COND_QUOTA_RESERVED, "True", "QuotaReserved", "", T0 + timedelta(seconds=reserved_age))
    return Workload(
        namespace=wl.namespace,
        name=wl.name,
        uid=wl.uid,
        pod_sets=wl.pod_sets,
        queue_name=wl.queue_name,
        priority=wl.priority,
        created=wl.created,
        admission=Admission(cq, assignments),
        conditions=(cond,),
    )


def snapshot(
    cqs: list[ClusterQueue],
    workloads: list[Workload],
    *,
    flavors: list[ResourceFlavor] | None = None,
    local_queues: list[LocalQueue] | None = None,
    cohorts: list[Cohort] | None = None,
) -> Snapshot:
    names = {f.name for cq in cqs for g in cq.resource_groups for f in g.flavors}
    names |= {f.name for c in cohorts or () for g in c.resource_groups for f in g.flavors}
    return Snapshot(
        cluster_queues=cqs,
        flavors=flavors if flavors is not None else [ResourceFlavor(n) for n in sorted(names)],
        local_queues=local_queues if local_queues is not None else [local_queue(cq.name) for cq in cqs],
        workloads=workloads,
        cohorts=cohorts or (),
    )
