"""Decisions as data: what one scheduling pass concluded, for the reconciler to commit.

Owns: ``SchedulingResult`` and its parts (admissions, preemptions, pending workloads with reasons), and the
conversion of an admission into the exact ``status.admission`` object Kueue writes.
Must not: write anything; committing (reserve in memory, patch, roll back on conflict) is the reconciler's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import msgspec

from webhook.api import constants
from webhook.api.quantity import Quantity, format_quantity
from webhook.api.workload import Admission, PodSetAssignment

# When to run the scheduler again for a pending workload: the reconciler parks it until such an event.
RETRY_ON_QUOTA_FREED: Final = "QuotaFreed"  # a workload finishes or is evicted in the same cohort
RETRY_ON_QUEUE_CHANGED: Final = "QueueChanged"  # only a change to queues, flavors or the workload can help
RETRY_ON_PREEMPTED: Final = "VictimsEvicted"  # the victims chosen for it are gone
RETRY_ON_TIME: Final = "BackoffElapsed"  # requeueAt passes

_PREEMPTION_CAUSE: Final = {
    constants.PREEMPTED_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    constants.PREEMPTED_IN_COHORT_RECLAMATION: "reclamation within the cohort",
    constants.PREEMPTED_IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    constants.PREEMPTED_IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
}


@dataclass(frozen=True, slots=True)
class PodSetAdmission:
    name: str
    flavors: Mapping[str, str]  # resource -> ResourceFlavor
    resource_usage: Mapping[str, Quantity]  # totals for `count` pods
    count: int


@dataclass(frozen=True, slots=True)
class AdmissionDecision:
    workload: tuple[str, str]  # (namespace, name)
    uid: str
    cluster_queue: str
    pod_sets: tuple[PodSetAdmission, ...]
    borrowing: bool  # uses quota lent by the cohort
    partial: bool  # admitted with fewer pods than asked (minCount)

    def admission(self) -> Admission:
        return Admission(
            self.cluster_queue,
            tuple(PodSetAssignment(p.name, p.flavors, p.resource_usage, p.count) for p in self.pod_sets),
        )


@dataclass(frozen=True, slots=True)
class Victim:
    workload: tuple[str, str]
    uid: str
    cluster_queue: str
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | InCohortFairSharing
    message: str


@dataclass(frozen=True, slots=True)
class PreemptionDecision:
    preemptor: tuple[str, str]
    uid: str
    cluster_queue: str
    victims: tuple[Victim, ...]


class PendingDecision(msgspec.Struct, frozen=True, gc=False):
    """One per pending workload and pass (50,000 in a deep backlog): a struct the collector never tracks, built
    several times faster than a frozen dataclass."""

    workload: tuple[str, str]
    uid: str
    cluster_queue: str | None  # None when the workload's queue could not be resolved
    reason: str  # QuotaReserved=False condition reason (WaitingForQuota, NoMatchingFlavor, ...)
    detail: str  # what is missing where, whether preemption helps (shared by identical workloads)
    position: int | None  # 1-based position among the ClusterQueue's pending workloads
    queue_length: int | None  # how many workloads are pending in that ClusterQueue
    retry_on: str  # RETRY_ON_*: what must happen before scheduling it again can change the answer

    @property
    def message(self) -> str:
        """The condition message for people; built on demand, as most of 50,000 are never written."""
        if self.position is None:
            return self.detail
        return f"{self.detail}; position {self.position} of {self.queue_length} in ClusterQueue {self.cluster_queue}"


@dataclass(frozen=True, slots=True)
class SchedulingResult:
    admitted: tuple[AdmissionDecision, ...]
    preemptions: tuple[PreemptionDecision, ...]
    pending: tuple[PendingDecision, ...]
    # With fair sharing on: status.fairSharing.weightedShare after this pass, per ClusterQueue and per Cohort.
    cluster_queue_shares: tuple[tuple[str, int], ...] = ()
    cohort_shares: tuple[tuple[str, int], ...] = ()


def victim_message(preemptor_uid: str, reason: str) -> str:
    return f"Preempted to accommodate a workload (UID: {preemptor_uid}) due to {_PREEMPTION_CAUSE[reason]}"


def admission_status(decision: AdmissionDecision) -> dict[str, Any]:
    """The ``status.admission`` object to write, exactly in Kueue's shape."""
    return {
        "clusterQueue": decision.cluster_queue,
        "podSetAssignments": [
            {
                "name": p.name,
                "flavors": dict(sorted(p.flavors.items())),
                "resourceUsage": {r: format_quantity(q) for r, q in sorted(p.resource_usage.items())},
                "count": p.count,
            }
            for p in decision.pod_sets
        ],
    }


def _time(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def quota_reserved_condition(decision: AdmissionDecision, now: datetime) -> dict[str, Any]:
    return {
        "type": constants.COND_QUOTA_RESERVED,
        "status": "True",
        "reason": constants.REASON_QUOTA_RESERVED,
        "message": f"Quota reserved in ClusterQueue {decision.cluster_queue}",
        "lastTransitionTime": _time(now),
    }


def pending_condition(decision: PendingDecision, now: datetime) -> dict[str, Any]:
    return {
        "type": constants.COND_QUOTA_RESERVED,
        "status": "False",
        "reason": decision.reason,
        "message": decision.message,
        "lastTransitionTime": _time(now),
    }
