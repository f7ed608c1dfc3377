"""Evictions other than preemption, decided from one typed Workload and the stop policies of its queues.

Owns: ``decide_eviction`` (deactivation, ``maximumExecutionTimeSeconds``, a ``HoldAndDrain`` stop policy on its
ClusterQueue or LocalQueue, waitForPodsReady's timeout with Kueue's requeue backoff and limit, in that order of
precedence) returning what to do and when to look again, and ``reactivated`` (a deactivated Workload turned active
again is requeued). ``WorkloadSync`` applies the answers; nothing here writes, reads the clock (``now`` is given)
or looks anything up.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Final

from webhook.api import conditions, constants
from webhook.api.configuration import WaitForPodsReady
from webhook.api.model import Status, Workload, condition_true

MAX_EXEC_REASON: Final = "DeactivatedDueToMaximumExecutionTimeExceeded"
REQUEUING_LIMIT_REASON: Final = "DeactivatedDueToRequeuingLimitExceeded"
PODS_READY_TIMEOUT: Final = "PodsReadyTimeout"
HOLD_AND_DRAIN: Final = "HoldAndDrain"


@dataclass(frozen=True, slots=True)
class Eviction:
    """Evict with ``reason``/``message``; ``deactivate`` first sets ``spec.active: false``.

    ``requeue_at`` is set for a pods-ready timeout within the requeuing limit: the Workload is evicted with
    reason ``PodsReadyTimeout``, its requeue count raised, and may queue again at that time.
    """

    reason: str
    message: str
    deactivate: bool = False
    requeue_at: datetime.datetime | None = None


@dataclass(frozen=True, slots=True)
class EvictionCheck:
    eviction: Eviction | None = None
    due: datetime.datetime | None = None  # when a time-based eviction falls due, if none is due now


def backoff_seconds(previous_count: int, *, base: float, cap: float) -> float:
    """Kueue's requeue backoff: base x 2^(n-1) for the n-th requeue, capped."""
    return float(min(cap, base * 2**previous_count))


def admitted_since(status: Status) -> datetime.datetime | None:
    """When Admitted turned True, or None while it is not (or the time is missing)."""
    condition = status.condition(constants.COND_ADMITTED)
    if condition is None or condition.status != "True" or not condition.last_transition_time:
        return None
    return conditions.parse_time(condition.last_transition_time)


def execution_deadline(workload: Workload) -> datetime.datetime | None:
    """When an admitted Workload exceeds ``maximumExecutionTimeSeconds`` (time run before counts), or None."""
    seconds = workload.spec.maximum_execution_time_seconds
    since = admitted_since(workload.status)
    if seconds is None or since is None:
        return None
    past = workload.status.accumulated_past_execution_time_seconds
    return since + datetime.timedelta(seconds=seconds - past)


def ready_deadline(workload: Workload, pods_ready: WaitForPodsReady | None) -> datetime.datetime | None:
    """When an admitted Workload's pods must be ready by (waitForPodsReady enabled), or None."""
    if pods_ready is None or not pods_ready.enable:
        return None
    if condition_true(workload.status.conditions, constants.COND_PODS_READY):
        return None
    since = admitted_since(workload.status)
    return None if since is None else since + datetime.timedelta(seconds=pods_ready.timeout_seconds)


def _pods_ready_timeout(workload: Workload, pods_ready: WaitForPodsReady, now: datetime.datetime) -> Eviction:
    strategy = pods_ready.requeuing
    count = workload.status.requeue_count
    if strategy.backoff_limit_count is not None and count + 1 > strategy.backoff_limit_count:
        return Eviction(REQUEUING_LIMIT_REASON, "Requeuing limit exceeded", deactivate=True)
    wait = backoff_seconds(count, base=strategy.backoff_base_seconds, cap=strategy.backoff_max_seconds)
    message = f"Pods not ready within {pods_ready.timeout_seconds:g}s; requeued in {wait:g}s"
    return Eviction(PODS_READY_TIMEOUT, message, requeue_at=now + datetime.timedelta(seconds=wait))


def decide_eviction(
    workload: Workload,
    *,
    now: datetime.datetime,
    pods_ready: WaitForPodsReady | None = None,
    cluster_queue_stop_policy: str | None = None,
    local_queue_stop_policy: str | None = None,
) -> EvictionCheck:
    """Whether a Workload holding quota (and not already evicted) must be evicted now, and if not, when to look.

    The stop policies are those of the ClusterQueue it is admitted to and of its LocalQueue (None: no such queue).
    """
    status = workload.status
    if not status.holds_quota or status.evicted:
        return EvictionCheck()
    # 1. Deactivated by a person or a tool.
    if not workload.spec.active:
        return EvictionCheck(Eviction("Deactivated", "The workload is deactivated"))
    # 2. Ran past its maximum execution time: deactivated too, as in Kueue.
    deadline = execution_deadline(workload)
    if deadline is not None and deadline <= now:
        return EvictionCheck(Eviction(MAX_EXEC_REASON, "Exceeded the maximum execution time", deactivate=True))
    # 3. A queue stopped with HoldAndDrain drains what it admitted.
    if cluster_queue_stop_policy == HOLD_AND_DRAIN:
        cq = status.admission.cluster_queue if status.admission is not None else ""
        return EvictionCheck(Eviction("ClusterQueueStopped", f"The ClusterQueue {cq} is stopped"))
    if local_queue_stop_policy == HOLD_AND_DRAIN:
        lq = workload.spec.queue_name
        return EvictionCheck(Eviction("LocalQueueStopped", f"The LocalQueue {lq} is stopped"))
    # 4. Its pods were not ready in time.
    ready_by = ready_deadline(workload, pods_ready)
    if ready_by is not None and ready_by <= now:
        assert pods_ready is not None  # a ready deadline exists only with waitForPodsReady
        return EvictionCheck(_pods_ready_timeout(workload, pods_ready, now))
    due = [d for d in (deadline, ready_by) if d is not None]
    return EvictionCheck(due=min(due) if due else None)


def reactivated(workload: Workload) -> bool:
    """Deactivated, evicted and released, then made active again: it is to be requeued (Requeued=True)."""
    requeued = workload.status.condition(constants.COND_REQUEUED)
    return (
        workload.spec.active
        and requeued is not None
        and requeued.status == "False"
        and requeued.reason.startswith("Deactivated")
        and not workload.status.holds_quota
    )
