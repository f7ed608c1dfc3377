"""What the CLI shows, computed from the objects read: queue quota pictures, workload states, positions.

Owns: the rows and reports (frozen dataclasses) and the pure functions that build them, including the queue
order used for positions (priority, highest first, then creation time, oldest first: the order Kueue's heap
uses for both StrictFIFO and BestEffortFIFO).
Each function views the objects it is given once (``webhook.api.views``: a ClusterQueue or LocalQueue as an
``ObjectView``, a Workload as a ``WorkloadRecord``, a Job as a ``BatchJob``); callers may pass the objects as the
API server sent them. Must not: do I/O, read the clock (``now`` is passed in), or format text (``render`` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, TypeVar

from webhook.api import constants, model
from webhook.api.quantity import InvalidQuantity, Quantity, parse_quantity
from webhook.api.resources import pod_requests
from webhook.api.views import BatchJob, ObjectLike, ObjectView, WorkloadRecord, entries, view_of
from webhook.api.workload import EPOCH
from webhook.core.fit import FitAnswer

_Object = TypeVar("_Object", bound=ObjectLike)


# -- queues ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaRow:
    """One flavor/resource of a ClusterQueue: its quota and what is reserved and used against it."""

    flavor: str
    resource: str
    nominal: str
    borrowing_limit: str | None
    lending_limit: str | None
    reserved: str
    used: str
    borrowed: str
    reserved_percent: int | None  # of nominal; None when nominal is 0


@dataclass(frozen=True)
class ClusterQueueView:
    name: str
    cohort: str
    stop_policy: str
    active: bool
    pending: int
    reserving: int
    admitted: int
    quota: tuple[QuotaRow, ...]


@dataclass(frozen=True)
class UsageRow:
    flavor: str
    resource: str
    reserved: str
    used: str


@dataclass(frozen=True)
class LocalQueueView:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str
    pending: int
    reserving: int
    admitted: int
    usage: tuple[UsageRow, ...]


def _quantity(raw: object) -> Quantity | None:
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except InvalidQuantity:
        return None


def _text(q: Quantity | None) -> str:
    return str(q) if q is not None else "0"


class _Held(NamedTuple):
    """What a queue's status says is held of one flavor and resource (quantities as written)."""

    total: object = None
    borrowed: object = None


_NOTHING_HELD = _Held()


def _held(flavors: object) -> dict[tuple[str, str], _Held]:
    """``status.flavorsReservation`` or ``flavorsUsage`` (``[{name: flavor, resources: [{name, total, borrowed}]}]``)
    by (flavor, resource)."""
    out: dict[tuple[str, str], _Held] = {}
    for flavor in flavors if isinstance(flavors, list) else []:
        for resource in entries(flavor, "resources"):
            key = (str(flavor.get("name", "")), str(resource.get("name", "")))
            out[key] = _Held(resource.get("total"), resource.get("borrowed"))
    return out


def _count(queue: ObjectView, field: str) -> int:
    return int(queue.status.get(field) or 0)


def cluster_queue_view(cq: ObjectLike) -> ClusterQueueView:
    queue = view_of(ObjectView, cq)
    spec, status = queue.spec, queue.status
    reserved, used = _held(status.get("flavorsReservation")), _held(status.get("flavorsUsage"))
    rows: list[QuotaRow] = []
    for group in entries(spec, "resourceGroups"):
        for flavor in entries(group, "flavors"):
            for resource in entries(flavor, "resources"):
                key = (str(flavor.get("name", "")), str(resource.get("name", "")))
                nominal = _quantity(resource.get("nominalQuota"))
                held = _quantity(reserved.get(key, _NOTHING_HELD).total)
                percent = None
                if nominal and held is not None:
                    percent = round(100 * held.nano / nominal.nano)
                elif nominal:
                    percent = 0
                borrowing, lending = resource.get("borrowingLimit"), resource.get("lendingLimit")
                rows.append(
                    QuotaRow(
                        flavor=key[0],
                        resource=key[1],
                        nominal=_text(nominal),
                        borrowing_limit=None if borrowing is None else _text(_quantity(borrowing)),
                        lending_limit=None if lending is None else _text(_quantity(lending)),
                        reserved=_text(held),
                        used=_text(_quantity(used.get(key, _NOTHING_HELD).total)),
                        borrowed=_text(_quantity(reserved.get(key, _NOTHING_HELD).borrowed)),
                        reserved_percent=percent,
                    )
                )
    return ClusterQueueView(
        name=queue.key.name,
        cohort=str(spec.get("cohortName") or ""),
        stop_policy=str(spec.get("stopPolicy") or "None"),
        active=queue.condition_true("Active"),
        pending=_count(queue, "pendingWorkloads"),
        reserving=_count(queue, "reservingWorkloads"),
        admitted=_count(queue, "admittedWorkloads"),
        quota=tuple(rows),
    )


def _target(lq: ObjectView) -> str:
    """A LocalQueue's ``spec.clusterQueue``."""
    return str(lq.spec.get("clusterQueue", ""))


def local_queue_view(lq: ObjectLike) -> LocalQueueView:
    queue = view_of(ObjectView, lq)
    reserved = _held(queue.status.get("flavorsReservation"))
    used = _held(queue.status.get("flavorsUsage"))
    usage = tuple(
        UsageRow(
            flavor=f,
            resource=r,
            reserved=_text(_quantity(reserved.get((f, r), _NOTHING_HELD).total)),
            used=_text(_quantity(used.get((f, r), _NOTHING_HELD).total)),
        )
        for f, r in sorted(reserved.keys() | used.keys())
    )
    return LocalQueueView(
        namespace=queue.key.namespace,
        name=queue.key.name,
        cluster_queue=_target(queue),
        stop_policy=str(queue.spec.get("stopPolicy") or "None"),
        pending=_count(queue, "pendingWorkloads"),
        reserving=_count(queue, "reservingWorkloads"),
        admitted=_count(queue, "admittedWorkloads"),
        usage=usage,
    )


# -- workloads ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadView:
    namespace: str
    name: str
    owner: str  # "Job/train", or "" for a bare Workload
    local_queue: str
    cluster_queue: str  # "" when the LocalQueue is unknown
    priority: int
    priority_class: str
    state: str  # Pending | QuotaReserved | Admitted | Finished | Inactive
    reason: str
    message: str
    created: str
    age_seconds: int
    position: int | None = None  # 1 = next to be considered in its ClusterQueue; None unless pending
    pending_in_cluster_queue: int | None = None
    uid: str = ""  # the scheduler's last tie-break in a queue


def _owner(wl: ObjectView) -> str:
    """``Kind/name`` of its controller (else of its first owner); "" for a bare Workload."""
    refs = wl.owner_references
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return f"{ref.get('kind')}/{ref.get('name')}" if ref is not None else ""


def workload_state(wl: ObjectLike) -> tuple[str, str, str]:
    """(state, reason, message) of a Workload, from its conditions as Kueue writes them."""
    workload = view_of(WorkloadRecord, wl)
    for type_, state in (
        (constants.COND_FINISHED, "Finished"),
        (constants.COND_ADMITTED, "Admitted"),
        (constants.COND_QUOTA_RESERVED, "QuotaReserved"),
    ):
        cond = workload.condition(type_)
        if cond is not None and cond.get("status") == "True":
            return state, str(cond.get("reason", "")), str(cond.get("message", ""))
    if workload.spec.get("active") is False:
        evicted = workload.condition(constants.COND_EVICTED)
        message = str(evicted.get("message", "")) if evicted else "spec.active is false"
        return "Inactive", "Deactivated", message
    cond = workload.condition(constants.COND_QUOTA_RESERVED)
    if cond is None:
        # New, or further back in its ClusterQueue than the front whose reasons the scheduler writes.
        return (
            "Pending",
            constants.REASON_PENDING_EVALUATION,
            f"no reason written yet (new, or behind the first {constants.PENDING_REASON_POSITIONS} in its queue)",
        )
    return "Pending", str(cond.get("reason", constants.REASON_PENDING)), str(cond.get("message", ""))


def _parse_time(raw: object) -> datetime | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


def queue_order_key(wl: WorkloadView) -> model.QueueOrder:
    """The scheduler's order of a queue (webhook.api.model.queue_order), so positions match its decisions."""
    created = _parse_time(wl.created) or EPOCH
    return model.queue_order(priority=wl.priority, created=created, uid=wl.uid, namespace=wl.namespace, name=wl.name)


def workload_views(
    workloads: Iterable[ObjectLike],
    *,
    local_queues: Iterable[ObjectLike],
    now: datetime,
) -> list[WorkloadView]:
    """Every workload with its ClusterQueue and, when pending, its position there.

    Positions count only the pending workloads given: pass every workload of the ClusterQueues of interest
    (all namespaces when you can list them) for positions that match the scheduler's.
    """
    lq_target: dict[tuple[str, str], str] = {
        queue.key: _target(queue) for queue in (view_of(ObjectView, lq) for lq in local_queues)
    }
    views: list[WorkloadView] = []
    for wl in workloads:
        workload = view_of(WorkloadRecord, wl)
        (namespace, name), queue = workload.key, workload.queue_name
        state, reason, message = workload_state(workload)
        created_raw = str(workload.metadata.get("creationTimestamp", ""))
        created = _parse_time(created_raw)
        views.append(
            WorkloadView(
                namespace=namespace,
                name=name,
                uid=str(workload.metadata.get("uid", "")),
                owner=_owner(workload),
                local_queue=queue,
                cluster_queue=workload.admitted_to or lq_target.get((namespace, queue), ""),
                priority=workload.priority,
                priority_class=workload.priority_class_name,
                state=state,
                reason=reason,
                message=message,
                created=created_raw,
                age_seconds=max(0, int((now - created).total_seconds())) if created else 0,
            )
        )
    return with_positions(views)


def with_positions(views: Sequence[WorkloadView]) -> list[WorkloadView]:
    """The same views, each pending one given its 1-based position among the pending of its ClusterQueue."""
    pending: dict[str, list[WorkloadView]] = {}
    for view in views:
        if view.state == "Pending" and view.cluster_queue:
            pending.setdefault(view.cluster_queue, []).append(view)
    positions: dict[tuple[str, str], tuple[int, int]] = {}
    for queue in pending.values():
        queue.sort(key=queue_order_key)
        for i, view in enumerate(queue, start=1):
            positions[(view.namespace, view.name)] = (i, len(queue))
    out = []
    for view in views:
        pos = positions.get((view.namespace, view.name))
        if pos is not None:
            view = WorkloadView(**{**view.__dict__, "position": pos[0], "pending_in_cluster_queue": pos[1]})
        out.append(view)
    return out


def sort_for_listing(views: Iterable[WorkloadView]) -> list[WorkloadView]:
    """Pending first, by ClusterQueue and position; then everything else by namespace and name."""
    return sorted(
        views,
        key=lambda v: (
            v.position is None,
            v.cluster_queue,
            v.position or 0,
            v.namespace,
            v.name,
        ),
    )


# -- why ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodSetView:
    name: str
    count: int
    per_pod: dict[str, str]
    total: dict[str, str]


@dataclass(frozen=True)
class WhyReport:
    """Everything ``turnstile why`` says about one job."""

    subject: str  # "Job team-a/train"
    workload: WorkloadView | None
    pod_sets: tuple[PodSetView, ...] = ()
    local_queue: LocalQueueView | None = None
    cluster_queue: ClusterQueueView | None = None
    ahead: tuple[WorkloadView, ...] = ()  # pending workloads before this one in its ClusterQueue (first few)
    notes: tuple[str, ...] = field(default=())
    fit: FitAnswer | None = None  # the scheduler's answer now (``core.fit``, as ``turnstile fit`` gives it)


def pod_set_views(wl: ObjectLike) -> tuple[PodSetView, ...]:
    out = []
    for ps in view_of(WorkloadRecord, wl).pod_sets:
        count = int(ps.count or 0)
        try:
            per_pod = pod_requests(ps.template.spec)
        except (InvalidQuantity, ValueError):
            per_pod = {}
        out.append(
            PodSetView(
                name=str(ps.name_or("")),
                count=count,
                per_pod={k: str(v) for k, v in sorted(per_pod.items())},
                total={k: str(v * count) for k, v in sorted(per_pod.items())},
            )
        )
    return tuple(out)


def _job_notes(job: BatchJob | None, subject: str) -> list[str]:
    if job is None:
        return []
    notes = []
    if constants.QUEUE_NAME_LABEL not in job.labels:
        notes.append(
            f"{subject} has no {constants.QUEUE_NAME_LABEL} label: Turnstile manages it only if its namespace "
            "is managed (manageJobsWithoutQueueName)"
        )
    if job.spec.get("suspend") is not True and not job.condition_true("Complete"):
        notes.append(f"{subject} is not suspended: it runs (or will) without waiting for quota")
    return notes


def explain(
    subject: str,
    *,
    job: ObjectLike | None,
    workload: ObjectLike | None,
    local_queue: ObjectLike | None,
    cluster_queue: ObjectLike | None,
    peers: Iterable[ObjectLike],
    local_queues: Iterable[ObjectLike],
    now: datetime,
    ahead_limit: int = 5,
) -> WhyReport:
    """The answer to "why is my job (not) running", from the objects involved.

    ``peers``: the workloads that share its ClusterQueue (and any others: they are filtered here), for the
    position. ``local_queues``: every LocalQueue visible, to map peers to their ClusterQueue.
    """
    notes = _job_notes(None if job is None else view_of(BatchJob, job), subject)
    if workload is None:
        notes.append(f"no Workload found for {subject}: the reconciler has not created one yet, or it is not managed")
        return WhyReport(subject=subject, workload=None, notes=tuple(notes))

    record = view_of(WorkloadRecord, workload)
    others = [p for p in (view_of(WorkloadRecord, p) for p in peers) if p.key != record.key]
    views = workload_views(
        [record, *others], local_queues=[*local_queues, *([local_queue] if local_queue else [])], now=now
    )
    me = views[0]
    ahead: tuple[WorkloadView, ...] = ()
    if me.position is not None:
        queue = sorted(
            (v for v in views if v.cluster_queue == me.cluster_queue and v.position is not None),
            key=queue_order_key,
        )
        ahead = tuple(queue[: me.position - 1][:ahead_limit])

    lq_view = local_queue_view(local_queue) if local_queue else None
    cq_view = cluster_queue_view(cluster_queue) if cluster_queue else None
    if local_queue is None and me.local_queue:
        notes.append(f"LocalQueue {me.namespace}/{me.local_queue} does not exist: create it, or fix the queue name")
    if lq_view and lq_view.stop_policy != "None":
        notes.append(f"LocalQueue {lq_view.namespace}/{lq_view.name} is stopped ({lq_view.stop_policy})")
    if local_queue is not None and cluster_queue is None and me.cluster_queue:
        notes.append(f"ClusterQueue {me.cluster_queue} does not exist (or you may not read it)")
    if cq_view and cq_view.stop_policy != "None":
        notes.append(f"ClusterQueue {cq_view.name} is stopped ({cq_view.stop_policy}): an admin resumes it")
    elif cq_view and not cq_view.active:
        notes.append(f"ClusterQueue {cq_view.name} is not active (a flavor or admission check is missing?)")
    return WhyReport(
        subject=subject,
        workload=me,
        pod_sets=pod_set_views(record),
        local_queue=lq_view,
        cluster_queue=cq_view,
        ahead=ahead,
        notes=tuple(notes),
    )


def find_workload_for(job: ObjectLike, workloads: Iterable[_Object]) -> _Object | None:
    """The Workload of ``job`` among ``workloads`` (returned as given): the one the webhook named in its
    annotation, else the one it owns."""
    seen = view_of(ObjectView, job)
    named, uid = seen.annotations.get(constants.WORKLOAD_NAME_ANNOTATION), seen.metadata.get("uid")
    candidates = [(wl, view_of(ObjectView, wl)) for wl in workloads]
    if named:
        for wl, view in candidates:
            if view.metadata.get("name") == named:
                return wl
    for wl, view in candidates:
        if uid and any(ref.get("uid") == uid for ref in view.owner_references):
            return wl
    return None
