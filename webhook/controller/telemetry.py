"""What the controller reports about queues and admissions: the ``QueueMetrics`` protocol.

Owns: the calls the reconciler makes on its hot paths, as plain arguments. ``webhook.metrics.Metrics`` implements
them with Prometheus and Kueue's metric names; tests may pass anything with the same methods, or nothing.
Must not: import a metrics library (the controller depends on this protocol, never on the exporter).
"""

from __future__ import annotations

from typing import Literal, Protocol

AttemptResult = Literal["success", "inadmissible"]
ClusterQueueStatus = Literal["pending", "active", "terminated"]


class QueueMetrics(Protocol):
    def admission_attempt(self, result: AttemptResult, seconds: float) -> None:
        """One scheduling cycle: ``success`` if it admitted at least one workload."""
        ...

    def reconciler_pass(self, seconds: float) -> None:
        """One pass of the reconciler's loop, which took ``seconds`` (it schedules only when something schedulable
        changed, and waits for its admission and preemption writes)."""
        ...

    def set_information_share(self, share: float) -> None:
        """The fraction of their rates events, pending reasons and queue status keep now (``WriteLatency``)."""
        ...

    def quota_reserved(self, cluster_queue: str, wait_seconds: float) -> None: ...

    def workload_admitted(self, cluster_queue: str, wait_seconds: float) -> None: ...

    def workload_finished(self, cluster_queue: str) -> None: ...

    def workload_evicted(self, cluster_queue: str, reason: str) -> None: ...

    def workload_preempted(self, preempting_cluster_queue: str, reason: str) -> None: ...

    def set_pending(self, cluster_queue: str, active: int, inadmissible: int) -> None: ...

    def set_active_workloads(self, cluster_queue: str, *, reserving: int, admitted: int) -> None: ...

    def set_cluster_queue_status(self, cluster_queue: str, status: ClusterQueueStatus) -> None: ...

    def set_cluster_queue_quota(
        self,
        cluster_queue: str,
        *,
        flavor: str,
        resource: str,
        nominal: float,
        borrowing_limit: float | None = None,
        lending_limit: float | None = None,
        cohort: str = "",
    ) -> None: ...

    def set_cluster_queue_usage(
        self,
        cluster_queue: str,
        *,
        flavor: str,
        resource: str,
        reserved: float,
        used: float,
        cohort: str = "",
    ) -> None: ...

    def set_weighted_share(self, cluster_queue: str, share: float, *, cohort: str = "") -> None:
        """Fair sharing: the ClusterQueue's status.fairSharing.weightedShare."""
        ...

    def set_cohort_weighted_share(self, cohort: str, share: float) -> None: ...

    def forget_cluster_queue(self, cluster_queue: str) -> None:
        """Remove every series of a ClusterQueue that no longer exists."""
        ...
