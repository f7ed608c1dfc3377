"""The visibility API's documents, in Kueue's shape: pending workloads with their positions, discovery, errors.

Owns: ``PendingQueues`` (each ClusterQueue's pending workloads in the order the scheduler considers them, taken
from one ``core.schedule`` result, so positions are the scheduler's), the ``PendingWorkloadsSummary`` of a
ClusterQueue or a LocalQueue with Kueue's ``limit``/``offset`` semantics, the APIResourceList of each version,
and ``Status`` errors as the API server writes them.
Must not: do I/O or check who asks (``webhook.visibility.auth``).

Positions are 0-based, as Kueue's: ``positionInClusterQueue`` counts every pending workload of the ClusterQueue
before it, ``positionInLocalQueue`` those of its own LocalQueue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NotRequired, TypedDict

from webhook.api.views import WorkloadRecord
from webhook.core.decisions import PendingDecision, SchedulingResult

GROUP: Final = "visibility.kueue.x-k8s.io"
VERSIONS: Final = ("v1beta2", "v1beta1")
DEFAULT_LIMIT: Final = 1000  # Kueue's defaults
MAX_LIMIT: Final = 100_000

Obj = Mapping[str, Any]


# The documents, as the API server's aggregation layer relays them (Kueue's field names).
class ItemMetadataWire(TypedDict):
    name: str
    namespace: str
    creationTimestamp: str | None
    ownerReferences: NotRequired[list[dict[str, str]]]


class PendingWorkloadWire(TypedDict):
    metadata: ItemMetadataWire
    priority: int
    localQueueName: str
    positionInClusterQueue: int
    positionInLocalQueue: int


class PendingWorkloadsSummaryWire(TypedDict):
    kind: str
    apiVersion: str
    metadata: dict[str, str | None]
    items: list[PendingWorkloadWire]


class APIResourceWire(TypedDict):
    name: str
    singularName: str
    namespaced: bool
    kind: str
    verbs: list[str]


class APIResourceListWire(TypedDict):
    kind: str
    apiVersion: str
    groupVersion: str
    resources: list[APIResourceWire]


class StatusWire(TypedDict):
    kind: str
    apiVersion: str
    metadata: dict[str, str]
    status: str
    message: str
    reason: str
    code: int
    details: NotRequired[dict[str, str]]


@dataclass(frozen=True, slots=True)
class PendingEntry:
    namespace: str
    name: str
    local_queue: str
    priority: int
    workload: WorkloadRecord  # the Workload as the cache holds it (for its metadata)


class PendingQueues:
    """Pending workloads per ClusterQueue, in queue order; each pending Workload viewed (``workloads`` holds them
    as the cache does, by key)."""

    def __init__(self, result: SchedulingResult, workloads: Mapping[tuple[str, str], Obj]) -> None:
        queues: dict[str, list[tuple[int, PendingDecision]]] = {}
        for p in result.pending:
            if p.cluster_queue is not None and p.position is not None:
                queues.setdefault(p.cluster_queue, []).append((p.position, p))
        self._queues: dict[str, list[PendingEntry]] = {}
        for cq, entries in queues.items():
            entries.sort(key=lambda e: e[0])
            rows = []
            for _, p in entries:
                obj = workloads.get(p.workload)
                if obj is None:
                    continue
                seen = WorkloadRecord.of(obj)
                rows.append(PendingEntry(p.workload[0], p.workload[1], seen.queue_name, seen.priority, seen))
            self._queues[cq] = rows

    def cluster_queue(self, name: str) -> Sequence[PendingEntry]:
        return self._queues.get(name, ())


def parse_window(query: Mapping[str, str]) -> tuple[int, int]:
    """``(limit, offset)`` from the query string, bounded as Kueue bounds them; ``ValueError`` when not integers."""
    try:
        limit = int(query.get("limit", "0") or 0)
        offset = int(query.get("offset", "0") or 0)
    except ValueError:
        raise ValueError("limit and offset must be integers") from None
    limit = DEFAULT_LIMIT if limit == 0 else limit
    return min(max(limit, 0), MAX_LIMIT), max(offset, 0)


def _item(entry: PendingEntry, *, in_cq: int, in_lq: int) -> PendingWorkloadWire:
    seen = entry.workload
    owners = [{k: ref[k] for k in ("apiVersion", "kind", "name", "uid") if k in ref} for ref in seen.owner_references]
    metadata: ItemMetadataWire = {
        "name": entry.name,
        "namespace": entry.namespace,
        "creationTimestamp": seen.metadata.get("creationTimestamp"),
    }
    if owners:
        metadata["ownerReferences"] = owners
    return {
        "metadata": metadata,
        "priority": entry.priority,
        "localQueueName": entry.local_queue,
        "positionInClusterQueue": in_cq,
        "positionInLocalQueue": in_lq,
    }


def _summary(version: str, items: list[PendingWorkloadWire]) -> PendingWorkloadsSummaryWire:
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {"creationTimestamp": None},
        "items": items,
    }


def cluster_queue_summary(
    version: str, pending: Sequence[PendingEntry], *, limit: int, offset: int
) -> PendingWorkloadsSummaryWire:
    items = []
    in_lq: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(pending[: offset + limit]):
        key = (entry.namespace, entry.local_queue)
        position = in_lq.get(key, 0)
        in_lq[key] = position + 1
        if index >= offset:
            items.append(_item(entry, in_cq=index, in_lq=position))
    return _summary(version, items)


def local_queue_summary(
    version: str, pending: Sequence[PendingEntry], *, namespace: str, name: str, limit: int, offset: int
) -> PendingWorkloadsSummaryWire:
    items: list[PendingWorkloadWire] = []
    skipped = 0
    for index, entry in enumerate(pending):
        if len(items) >= limit:
            break
        if entry.namespace != namespace or entry.local_queue != name:
            continue
        if skipped < offset:
            skipped += 1
            continue
        items.append(_item(entry, in_cq=index, in_lq=len(items) + offset))
    return _summary(version, items)


def resource_list(version: str) -> APIResourceListWire:
    """What ``/apis/visibility.kueue.x-k8s.io/<version>`` lists (the aggregator's discovery reads it)."""

    def resource(name: str, kind: str, *, namespaced: bool, verbs: list[str]) -> APIResourceWire:
        return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs}

    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{version}",
        "resources": [
            resource("clusterqueues", "ClusterQueue", namespaced=False, verbs=[]),
            resource("clusterqueues/pendingworkloads", "PendingWorkloadsSummary", namespaced=False, verbs=["get"]),
            resource("localqueues", "LocalQueue", namespaced=True, verbs=[]),
            resource("localqueues/pendingworkloads", "PendingWorkloadsSummary", namespaced=True, verbs=["get"]),
        ],
    }


def status(code: int, reason: str, message: str, *, details: Mapping[str, str] | None = None) -> StatusWire:
    """A ``Status`` as the API server writes one; kubectl prints ``Error from server (<reason>): <message>``."""
    body: StatusWire = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = dict(details)
    return body
