"""Pending reasons: why a workload waits, in words a person can act on, and the Kueue condition reason.

Owns: turning the flavor attempts of an explained ``Assignment`` into a message naming the resource, the
flavors tried, how much is needed, free and lendable by the cohort, and whether preemption could help.
Must not: decide anything; it only describes the scheduler's findings. Position in queue is added by the
scheduler, which knows the queue.

Deliberately better than Kueue, whose message names only the first failing resource and "N more needed":
every tried flavor is listed with its numbers, and the preemption verdict says why.
"""

from __future__ import annotations

import functools
from typing import Final

from webhook.api import constants
from webhook.api.clusterqueue import NEVER, ClusterQueue
from webhook.api.quantity import Format, Quantity, format_quantity
from webhook.core.assignment import FIT, NO_FIT, NO_FLAVOR, PREEMPT, WAIT, Assignment, Attempt
from webhook.core.decisions import RETRY_ON_QUEUE_CHANGED, RETRY_ON_QUOTA_FREED

_BYTES: Final = ("memory", "ephemeral-storage", "hugepages-")


@functools.lru_cache(maxsize=4096)
def amount(resource: str, nano: int) -> str:
    """A quantity as people write it for this resource: 8Gi for bytes, 1500m or 4 for the rest. Memoised: every
    pass words the same few quotas and demands again for the front of each queue."""
    binary = any(resource == b or resource.startswith(b) for b in _BYTES)
    return format_quantity(Quantity(nano, Format.BINARY_SI if binary else Format.DECIMAL_SI))


def _attempt_phrase(a: Attempt, cq: ClusterQueue) -> str:
    if a.mode == NO_FLAVOR:
        if a.note == "not covered":
            return f"resource {a.resource} is not covered by ClusterQueue {cq.name}"
        return f"flavor {a.flavor} not eligible: {a.note}"
    need = f"{a.resource} in flavor {a.flavor} needs {amount(a.resource, a.needed)}"
    if a.mode == NO_FIT:
        return f"{need}, more than the {amount(a.resource, a.potential)} the ClusterQueue can ever use"
    text = (
        f"{need}, {amount(a.resource, a.available)} free "
        f"(nominal {amount(a.resource, a.nominal)}, {amount(a.resource, a.used)} in use)"
    )
    if cq.cohort:
        text += f", cohort {cq.cohort} has {amount(a.resource, a.cohort_free)} to lend"
    return text


def _preemption_phrase(assignment: Assignment, cq: ClusterQueue, *, preemption_failed: bool) -> str:
    p = cq.preemption
    if assignment.mode <= NO_FIT:
        return "preemption cannot help"
    if preemption_failed or assignment.mode == PREEMPT:
        return "preemption cannot help: preempting every eligible workload would not free enough"
    if p.within_cluster_queue == NEVER and p.reclaim_within_cohort == NEVER:
        # Name the one configuration change that would let it reclaim its own nominal quota.
        # Within its own nominal quota yet not free: a cohort member borrowed it.
        reclaimable = any(a.mode == WAIT and a.used + a.needed <= a.nominal for a in assignment.attempts)
        if reclaimable and cq.cohort:
            return "preemption could reclaim quota lent to the cohort, but reclaimWithinCohort is Never"
        return "preemption is not enabled in the ClusterQueue"
    return "preemption cannot help: no admitted workload may be preempted for it"


def explain_shortage(assignment: Assignment, cq: ClusterQueue, *, preemption_failed: bool) -> tuple[str, str, str]:
    """(condition reason, message, retry_on) for a workload that did not fit."""
    by_pod_set: dict[str, list[str]] = {}
    for a in assignment.attempts:
        if a.mode < FIT:
            by_pod_set.setdefault(a.pod_set, []).append(_attempt_phrase(a, cq))
    shortage = "; ".join(f"couldn't assign flavors to pod set {ps}: {', '.join(p)}" for ps, p in by_pod_set.items())
    if assignment.mode == NO_FLAVOR:
        reason, retry = constants.REASON_NO_MATCHING_FLAVOR, RETRY_ON_QUEUE_CHANGED
    elif assignment.mode == NO_FIT:
        reason, retry = constants.REASON_EXCEEDS_MAX_QUOTA, RETRY_ON_QUEUE_CHANGED
    else:
        reason, retry = constants.REASON_WAITING_FOR_QUOTA, RETRY_ON_QUOTA_FREED
    if not shortage:
        shortage = "the quota it fitted in was taken by workloads ahead of it in this pass"
    phrase = _preemption_phrase(assignment, cq, preemption_failed=preemption_failed)
    return reason, f"{shortage}; {phrase}", retry
