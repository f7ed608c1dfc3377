"""The Workload's own lifecycle as pure transformations of its object: admit, evict, requeue, finish.

Each function returns the body of a status write: the Workload's identity and the ``status`` to write through
the status subresource (the caller writes it with the resourceVersion it read, so a concurrent change is a
conflict, never a lost update). Each takes the Workload's view (``webhook.api.views.WorkloadRecord``); only
``admitted`` also takes the dict, for callers outside the reconciler. Condition types
and reasons are Kueue's; the predicates (finished, evicted, holds quota) are the view's, defined once in
``webhook.api.model``.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from webhook.api import conditions
from webhook.api.constants import (
    COND_ADMITTED,
    COND_EVICTED,
    COND_FINISHED,
    COND_PODS_READY,
    COND_PREEMPTED,
    COND_QUOTA_RESERVED,
    COND_REQUEUED,
    REASON_PENDING_EVALUATION,
    REASON_QUOTA_RESERVED,
)
from webhook.api.copies import writable
from webhook.api.views import ObjectLike, WorkloadRecord, view_of

JSON = dict[str, Any]

# Eviction reasons after which Kueue puts the workload straight back in its queue.
# "Resized": a pod group's owner was scaled while admitted (a StatefulSet's /scale): queued again at its new size.
RESIZED = "Resized"
REQUEUE_AT_ONCE = frozenset({"Preempted", "NodeFailures", "ClusterQueueStopped", "LocalQueueStopped", RESIZED})


def _conds(workload: WorkloadRecord) -> list[JSON]:
    return workload.conditions


def _status(workload: WorkloadRecord) -> JSON:
    """A copy of its status, to become the next one."""
    return writable(workload.status)


# What a status write sends besides the status: the API server's status endpoint takes nothing else from the body
# (it keeps the stored spec and metadata), and checks the resourceVersion (and uid) against the stored object.
_IDENTITY = ("name", "namespace", "uid", "resourceVersion")


def status_body(workload: WorkloadRecord, status: JSON) -> JSON:
    """The body of a status write: the Workload's identity and its new status. Sending the whole object made the
    API server decode, prune and default its spec (the pod templates: most of its bytes) on every admission,
    eviction and finish, only to replace it with the stored one."""
    raw = workload.raw
    meta = workload.metadata
    return {
        "apiVersion": raw.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
        "kind": raw.get("kind", "Workload"),
        "metadata": {k: meta[k] for k in _IDENTITY if k in meta},
        "status": status,
    }


def _set(conds: list[JSON], now: datetime.datetime, kind: str, status: bool, reason: str, message: str) -> list[JSON]:
    return conditions.set_condition(conds, kind=kind, status=status, reason=reason, message=message, now=now)


def admitted(workload: ObjectLike, admission: Mapping[str, Any], *, now: datetime.datetime) -> JSON:
    """Quota reserved and admitted in one step (Turnstile has no admission checks). ``workload``: its view, or the
    Workload as sent, for callers outside the reconciler."""
    workload = view_of(WorkloadRecord, workload)
    status = _status(workload)
    cq = admission["clusterQueue"]
    conds = _conds(workload)
    previous = conditions.find(conds, COND_EVICTED)
    conds = _set(conds, now, COND_QUOTA_RESERVED, True, REASON_QUOTA_RESERVED, f"Quota reserved in ClusterQueue {cq}")
    conds = _set(conds, now, COND_ADMITTED, True, "Admitted", "The workload is admitted")
    if previous is not None and previous.get("status") == "True":
        conds = _set(
            conds, now, COND_EVICTED, False, REASON_QUOTA_RESERVED, f"Previously: {previous.get('message', '')}"
        )
        conds = _set(conds, now, COND_PREEMPTED, False, REASON_QUOTA_RESERVED, "Quota reserved again")
    status["admission"] = writable(admission)
    status["conditions"] = conds
    # The requeue count survives readmission (the backoff keeps growing); the time to wait for is spent.
    requeue = dict(workload.requeue_state)
    requeue.pop("requeueAt", None)
    if requeue:
        status["requeueState"] = requeue
    else:
        status.pop("requeueState", None)
    return status_body(workload, status)


def pending(workload: WorkloadRecord, *, reason: str, message: str, now: datetime.datetime) -> JSON | None:
    """QuotaReserved=False with the scheduler's reason; None when that is already what the Workload says."""
    conds = _conds(workload)
    if conditions.same(conds, kind=COND_QUOTA_RESERVED, status=False, reason=reason, message=message):
        return None
    status = _status(workload)
    status["conditions"] = _set(conds, now, COND_QUOTA_RESERVED, False, reason, message)
    return status_body(workload, status)


def evicted(
    workload: WorkloadRecord,
    *,
    reason: str,
    message: str,
    now: datetime.datetime,
    preempted_reason: str | None = None,
) -> JSON:
    """Evicted=True (and Preempted=True when preempted): the job must stop before the quota is released."""
    status = _status(workload)
    conds = _set(_conds(workload), now, COND_EVICTED, True, reason, message)
    if preempted_reason is not None:
        conds = _set(conds, now, COND_PREEMPTED, True, preempted_reason, message)
    status["conditions"] = conds
    return status_body(workload, status)


def released(workload: WorkloadRecord, *, now: datetime.datetime) -> JSON:
    """The evicted workload's quota given back: no admission, QuotaReserved/Admitted False, Requeued set."""
    status = _status(workload)
    evict = conditions.find(_conds(workload), COND_EVICTED)
    reason = str((evict or {}).get("reason") or "Evicted")
    status.pop("admission", None)
    conds = _set(_conds(workload), now, COND_QUOTA_RESERVED, False, REASON_PENDING_EVALUATION, "Evicted: " + reason)
    conds = _set(conds, now, COND_ADMITTED, False, "NoReservation", "The workload has no reservation")
    active = workload.active
    if active and reason in REQUEUE_AT_ONCE:
        conds = _set(conds, now, COND_REQUEUED, True, reason, "Requeued after eviction")
    elif active and reason == "PodsReadyTimeout":
        at = workload.requeue_state.get("requeueAt", "")
        conds = _set(conds, now, COND_REQUEUED, False, reason, f"Requeued with backoff: waits until {at}")
    else:
        conds = _set(conds, now, COND_REQUEUED, False, reason, "Not requeued: " + reason)
    status["conditions"] = conds
    return status_body(workload, status)


def reactivated(workload: WorkloadRecord, *, now: datetime.datetime) -> JSON:
    """Requeued because ``spec.active`` went back to true (Kueue's reason ``Reactivated``)."""
    status = _status(workload)
    status["conditions"] = _set(
        _conds(workload), now, COND_REQUEUED, True, "Reactivated", "The workload was reactivated"
    )
    return status_body(workload, status)


def pods_ready(workload: WorkloadRecord, *, ready: bool, now: datetime.datetime) -> JSON | None:
    """PodsReady as observed on the job; None when the Workload already says so."""
    reason, message = (
        ("Started", "All pods are ready or succeeded") if ready else ("WaitForStart", "Not all pods are ready")
    )
    conds = _conds(workload)
    if conditions.same(conds, kind=COND_PODS_READY, status=ready, reason=reason, message=message):
        return None
    status = _status(workload)
    status["conditions"] = _set(conds, now, COND_PODS_READY, ready, reason, message)
    return status_body(workload, status)


def requeue_count(workload: WorkloadRecord) -> int:
    return int(workload.requeue_state.get("count") or 0)


def timed_out(workload: WorkloadRecord, *, message: str, requeue_at: datetime.datetime, now: datetime.datetime) -> JSON:
    """Evicted for PodsReadyTimeout, with the requeue count raised and the time it may queue again."""
    result = evicted(workload, reason="PodsReadyTimeout", message=message, now=now)
    result["status"]["requeueState"] = {
        "count": requeue_count(workload) + 1,
        "requeueAt": conditions.format_time(requeue_at),
    }
    return result


def finished(workload: WorkloadRecord, *, succeeded: bool, message: str, now: datetime.datetime) -> JSON:
    status = _status(workload)
    reason = "Succeeded" if succeeded else "Failed"
    status["conditions"] = _set(_conds(workload), now, COND_FINISHED, True, reason, message)
    return status_body(workload, status)


def failed_to_start(workload: WorkloadRecord, *, message: str, now: datetime.datetime) -> JSON:
    """The admission cannot be applied to the job (e.g. its nodeSelector contradicts the flavor): finish it."""
    status = _status(workload)
    status["conditions"] = _set(_conds(workload), now, COND_FINISHED, True, "FailedToStart", message)
    return status_body(workload, status)


def controlling_owner(workload: WorkloadRecord) -> JSON | None:
    """The object that owns ``workload`` (its Job), in the shape events and lookups need; None for a bare one."""
    meta = workload.metadata
    for owner in workload.owner_references:
        if owner.get("controller"):
            return {
                "apiVersion": owner.get("apiVersion"),
                "kind": owner.get("kind"),
                "metadata": {"name": owner.get("name"), "namespace": meta.get("namespace"), "uid": owner.get("uid")},
            }
    return None
