"""What the CLI shows, computed from objects as plain dicts: queue quota pictures, workload states, positions.

Owns: the rows and reports (frozen dataclasses) and the pure functions that build them, including the queue
order used for positions (priority, highest first, then creation time, oldest first: the order Kueue's heap
uses for both StrictFIFO and BestEffortFIFO).
Must not: do I/O, read the clock (``now`` is passed in), or format text (``render`` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from webhook.api import constants, model
from webhook.api.quantity import InvalidQuantity, Quantity, parse_quantity
from webhook.api.resources import pod_requests
from webhook.api.workload import EPOCH
from webhook.core.fit import FitAnswer

Obj = Mapping[str, Any]


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


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


def _spec(obj: Obj) -> Obj:
    spec: Obj = obj.get("spec") or {}
    return spec


def _status(obj: Obj) -> Obj:
    status: Obj = obj.get("status") or {}
    return status


def _quantity(raw: object) -> Quantity | None:
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except InvalidQuantity:
        return None


def _text(q: Quantity | None) -> str:
    return str(q) if q is not None else "0"


def _by_flavor(entries: object) -> dict[tuple[str, str], Obj]:
    """``[{name: flavor, resources: [{name, total, borrowed}]}]`` keyed by (flavor, resource)."""
    out: dict[tuple[str, str], Obj] = {}
    for flavor in entries if isinstance(entries, list) else []:
        for resource in flavor.get("resources") or []:
            out[(str(flavor.get("name", "")), str(resource.get("name", "")))] = resource
    return out


def _condition(obj: Obj, type_: str) -> Obj | None:
    for cond in _status(obj).get("conditions") or []:
        if cond.get("type") == type_:
            found: Obj = cond
            return found
    return None


def _is_true(obj: Obj, type_: str) -> bool:
    cond = _condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def cluster_queue_view(cq: Obj) -> ClusterQueueView:
    spec, status = _spec(cq), _status(cq)
    reserved, used = _by_flavor(status.get("flavorsReservation")), _by_flavor(status.get("flavorsUsage"))
    rows: list[QuotaRow] = []
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                key = (str(flavor.get("name", "")), str(resource.get("name", "")))
                nominal = _quantity(resource.get("nominalQuota"))
                held = _quantity(reserved.get(key, {}).get("total"))
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
                        used=_text(_quantity(used.get(key, {}).get("total"))),
                        borrowed=_text(_quantity(reserved.get(key, {}).get("borrowed"))),
                        reserved_percent=percent,
                    )
                )
    return ClusterQueueView(
        name=str(_meta(cq).get("name", "")),
        cohort=str(spec.get("cohortName") or ""),
        stop_policy=str(spec.get("stopPolicy") or "None"),
        active=_is_true(cq, "Active"),
        pending=int(status.get("pendingWorkloads") or 0),
        reserving=int(status.get("reservingWorkloads") or 0),
        admitted=int(status.get("admittedWorkloads") or 0),
        quota=tuple(rows),
    )


def local_queue_view(lq: Obj) -> LocalQueueView:
    spec, status = _spec(lq), _status(lq)
    reserved = _by_flavor(status.get("flavorsReservation"))
    used = _by_flavor(status.get("flavorsUsage"))
    usage = tuple(
        UsageRow(
            flavor=f,
            resource=r,
            reserved=_text(_quantity(reserved.get((f, r), {}).get("total"))),
            used=_text(_quantity(used.get((f, r), {}).get("total"))),
        )
        for f, r in sorted(reserved.keys() | used.keys())
    )
    return LocalQueueView(
        namespace=str(_meta(lq).get("namespace", "")),
        name=str(_meta(lq).get("name", "")),
        cluster_queue=str(spec.get("clusterQueue", "")),
        stop_policy=str(spec.get("stopPolicy") or "None"),
        pending=int(status.get("pendingWorkloads") or 0),
        reserving=int(status.get("reservingWorkloads") or 0),
        admitted=int(status.get("admittedWorkloads") or 0),
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


def _owner(wl: Obj) -> str:
    for ref in _meta(wl).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    refs = _meta(wl).get("ownerReferences") or []
    return f"{refs[0].get('kind')}/{refs[0].get('name')}" if refs else ""


def workload_state(wl: Obj) -> tuple[str, str, str]:
    """(state, reason, message) of a Workload, from its conditions as Kueue writes them."""
    for type_, state in (
        (constants.COND_FINISHED, "Finished"),
        (constants.COND_ADMITTED, "Admitted"),
        (constants.COND_QUOTA_RESERVED, "QuotaReserved"),
    ):
        cond = _condition(wl, type_)
        if cond is not None and cond.get("status") == "True":
            return state, str(cond.get("reason", "")), str(cond.get("message", ""))
    if _spec(wl).get("active") is False:
        evicted = _condition(wl, constants.COND_EVICTED)
        message = str(evicted.get("message", "")) if evicted else "spec.active is false"
        return "Inactive", "Deactivated", message
    cond = _condition(wl, constants.COND_QUOTA_RESERVED)
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
    workloads: Iterable[Obj],
    *,
    local_queues: Iterable[Obj],
    now: datetime,
) -> list[WorkloadView]:
    """Every workload with its ClusterQueue and, when pending, its position there.

    Positions count only the pending workloads given: pass every workload of the ClusterQueues of interest
    (all namespaces when you can list them) for positions that match the scheduler's.
    """
    lq_target = {
        (str(_meta(lq).get("namespace", "")), str(_meta(lq).get("name", ""))): str(_spec(lq).get("clusterQueue", ""))
        for lq in local_queues
    }
    views: list[WorkloadView] = []
    for wl in workloads:
        meta, spec = _meta(wl), _spec(wl)
        namespace, queue = str(meta.get("namespace", "")), str(spec.get("queueName", ""))
        admission = _status(wl).get("admission") or {}
        state, reason, message = workload_state(wl)
        created_raw = str(meta.get("creationTimestamp", ""))
        created = _parse_time(created_raw)
        views.append(
            WorkloadView(
                namespace=namespace,
                name=str(meta.get("name", "")),
                uid=str(meta.get("uid", "")),
                owner=_owner(wl),
                local_queue=queue,
                cluster_queue=str(admission.get("clusterQueue") or lq_target.get((namespace, queue), "")),
                priority=int(spec.get("priority") or 0),
                priority_class=str((spec.get("priorityClassRef") or {}).get("name") or ""),
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


def pod_set_views(wl: Obj) -> tuple[PodSetView, ...]:
    out = []
    for ps in _spec(wl).get("podSets") or []:
        count = int(ps.get("count") or 0)
        try:
            per_pod = pod_requests(((ps.get("template") or {}).get("spec")) or {})
        except (InvalidQuantity, ValueError):
            per_pod = {}
        out.append(
            PodSetView(
                name=str(ps.get("name", "")),
                count=count,
                per_pod={k: str(v) for k, v in sorted(per_pod.items())},
                total={k: str(v * count) for k, v in sorted(per_pod.items())},
            )
        )
    return tuple(out)


def _job_notes(job: Obj | None, subject: str) -> list[str]:
    if job is None:
        return []
    labels = _meta(job).get("labels") or {}
    notes = []
    if constants.QUEUE_NAME_LABEL not in labels:
        notes.append(
            f"{subject} has no {constants.QUEUE_NAME_LABEL} label: Turnstile manages it only if its namespace "
            "is managed (manageJobsWithoutQueueName)"
        )
    if _spec(job).get("suspend") is not True and not _is_true(job, "Complete"):
        notes.append(f"{subject} is not suspended: it runs (or will) without waiting for quota")
    return notes


def explain(
    subject: str,
    *,
    job: Obj | None,
    workload: Obj | None,
    local_queue: Obj | None,
    cluster_queue: Obj | None,
    peers: Iterable[Obj],
    local_queues: Iterable[Obj],
    now: datetime,
    ahead_limit: int = 5,
) -> WhyReport:
    """The answer to "why is my job (not) running", from the objects involved.

    ``peers``: the workloads that share its ClusterQueue (and any others: they are filtered here), for the
    position. ``local_queues``: every LocalQueue visible, to map peers to their ClusterQueue.
    """
    notes = _job_notes(job, subject)
    if workload is None:
        notes.append(f"no Workload found for {subject}: the reconciler has not created one yet, or it is not managed")
        return WhyReport(subject=subject, workload=None, notes=tuple(notes))

    key = (str(_meta(workload).get("namespace", "")), str(_meta(workload).get("name", "")))
    others = [p for p in peers if (str(_meta(p).get("namespace", "")), str(_meta(p).get("name", ""))) != key]
    views = workload_views(
        [workload, *others], local_queues=[*local_queues, *([local_queue] if local_queue else [])], now=now
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
        pod_sets=pod_set_views(workload),
        local_queue=lq_view,
        cluster_queue=cq_view,
        ahead=ahead,
        notes=tuple(notes),
    )


def find_workload_for(job: Obj, workloads: Iterable[Obj]) -> Obj | None:
    """The Workload of ``job``: the one the webhook named in its annotation, else the one it owns."""
    named = (_meta(job).get("annotations") or {}).get(constants.WORKLOAD_NAME_ANNOTATION)
    uid = _meta(job).get("uid")
    candidates = list(workloads)
    if named:
        for wl in candidates:
            if _meta(wl).get("name") == named:
                return wl
    for wl in candidates:
        if uid and any(ref.get("uid") == uid for ref in _meta(wl).get("ownerReferences") or []):
            return wl
    return None
