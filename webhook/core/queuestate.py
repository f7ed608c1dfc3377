"""What a ClusterQueue's and a LocalQueue's status should say, computed from one scheduling snapshot.

Owns: whether a queue is active and why (``cluster_queue_activeness``, ``local_queue_activeness``), the counts of
pending and quota-holding Workloads per queue (``QueueCounts``), and the usage they hold per flavor and resource.
``QueueStatusWriter`` turns these into status fields and metrics and writes only what changed; nothing here
writes or reads the clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from webhook.api.clusterqueue import ClusterQueue
from webhook.api.localqueue import LocalQueue
from webhook.api.quantity import Quantity
from webhook.api.workload import Workload
from webhook.core.snapshot import Snapshot
from webhook.core.usage import workload_usage

LocalQueueKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True, slots=True)
class Activeness:
    """The ``Active`` condition of a queue."""

    active: bool
    reason: str
    message: str


@dataclass(frozen=True)
class QueueCounts:
    """The Workloads holding quota in each ClusterQueue and LocalQueue, and how many wait in each."""

    held: Mapping[str, list[Workload]] = field(default_factory=dict)
    held_by_local_queue: Mapping[LocalQueueKey, list[Workload]] = field(default_factory=dict)
    pending: Counter[str] = field(default_factory=Counter)
    pending_by_local_queue: Counter[LocalQueueKey] = field(default_factory=Counter)


def count_workloads(snapshot: Snapshot) -> QueueCounts:
    """Holding quota: counted where it is admitted. Pending: counted in its LocalQueue and that queue's target."""
    lq_to_cq = {(lq.namespace, lq.name): lq.cluster_queue for lq in snapshot.local_queues}
    held: dict[str, list[Workload]] = {}
    held_by_lq: dict[LocalQueueKey, list[Workload]] = {}
    pending: Counter[str] = Counter()
    pending_by_lq: Counter[LocalQueueKey] = Counter()
    for wl in snapshot.workloads:
        lq_key = (wl.namespace, wl.queue_name)
        if wl.holds_quota and wl.admission is not None:
            held.setdefault(wl.admission.cluster_queue, []).append(wl)
            held_by_lq.setdefault(lq_key, []).append(wl)
        elif wl.pending:
            pending_by_lq[lq_key] += 1
            if lq_key in lq_to_cq:
                pending[lq_to_cq[lq_key]] += 1
    return QueueCounts(held, held_by_lq, pending, pending_by_lq)


def usage_of(workloads: Iterable[Workload]) -> dict[tuple[str, str], Quantity]:
    """Total usage per (flavor, resource); a sum keeps the first quantity's format (Gi stays Gi)."""
    usage: dict[tuple[str, str], Quantity] = {}
    for wl in workloads:
        for fr, q in workload_usage(wl).items():
            usage[fr] = usage[fr] + q if fr in usage else q
    return usage


def cluster_queue_activeness(cq: ClusterQueue, *, flavors: Iterable[str], cycle: str | None) -> Activeness:
    """Active unless stopped, terminating, naming a missing ResourceFlavor, or below a cycle of Cohorts."""
    known = set(flavors)
    if not (cq.active and all(f.name in known for g in cq.resource_groups for f in g.flavors)):
        return _inactive(cq)
    if cycle is not None:
        message = f"Can't admit new workloads: the parents of cohort {cq.cohort} form a cycle ({cycle})"
        return Activeness(False, "CohortHasCycle", message)
    return Activeness(True, "Ready", "Can admit new workloads")


def _inactive(cq: ClusterQueue) -> Activeness:
    if cq.terminating:  # Kueue's reason and message
        return Activeness(False, "Terminating", "Can't admit new workloads; clusterQueue is terminating")
    if not cq.active:
        return Activeness(False, "Stopped", f"ClusterQueue is stopped (stopPolicy {cq.stop_policy})")
    return Activeness(False, "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor")


def local_queue_activeness(lq: LocalQueue, *, cluster_queues: Iterable[str]) -> Activeness:
    """Active unless stopped or pointing at a ClusterQueue that does not exist."""
    if not lq.active:
        return Activeness(False, "Stopped", "LocalQueue is stopped")
    if lq.cluster_queue not in set(cluster_queues):
        return Activeness(
            False, "ClusterQueueDoesNotExist", f"Can't submit new workloads to clusterQueue {lq.cluster_queue}"
        )
    return Activeness(True, "Ready", "Can submit new workloads to localQueue")
