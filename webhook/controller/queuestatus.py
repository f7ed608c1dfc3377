"""ClusterQueue, LocalQueue and Cohort status, as ``kubectl get cq`` and dashboards read it.

Computed from one scheduling snapshot and the pass's result, written only when it differs from what the object
already says (a steady cluster writes nothing). Metrics with Kueue's names are set from the same numbers. With
fair sharing on, ClusterQueues and Cohorts carry ``status.fairSharing.weightedShare`` from the pass's result; a
ClusterQueue below a cycle of Cohorts is inactive with reason ``CohortHasCycle`` naming the cycle.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from webhook.api import conditions
from webhook.api.clusterqueue import ClusterQueue
from webhook.api.localqueue import LocalQueue
from webhook.api.quantity import Quantity, format_quantity
from webhook.api.workload import Workload
from webhook.controller.cache import ClusterCache
from webhook.controller.ratelimit import whole
from webhook.controller.telemetry import QueueMetrics
from webhook.core import queuestate
from webhook.core.admissionfairsharing import USAGE_BASED, AdmissionFairSharing, next_consumed
from webhook.core.decisions import SchedulingResult
from webhook.core.quota import QuotaBook
from webhook.core.snapshot import Snapshot
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import CLUSTER_QUEUE, COHORT, LOCAL_QUEUE

log = logging.getLogger(__name__)
ZERO = Quantity(0)


def _flavor_usage(
    cq: ClusterQueue, usage: Mapping[tuple[str, str], Quantity], *, with_borrowed: bool
) -> list[dict[str, Any]]:
    rows = []
    for group in cq.resource_groups:
        for flavor in group.flavors:
            resources = []
            for quota in flavor.resources:
                total = usage.get((flavor.name, quota.name), ZERO)
                row: dict[str, Any] = {"name": quota.name, "total": format_quantity(total)}
                if with_borrowed:
                    borrowed = total - quota.nominal
                    row["borrowed"] = format_quantity(borrowed if borrowed > ZERO else ZERO)
                resources.append(row)
            rows.append({"name": flavor.name, "resources": resources})
    return rows


class QueueStatusWriter:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        *,
        metrics: QueueMetrics | None = None,
        admission_fair_sharing: AdmissionFairSharing | None = None,
        deferred: bool = False,
        min_interval: float = 0.0,
        max_rate: float = 0.0,
        share: Callable[[], float] = whole,
    ) -> None:
        """``deferred``: the writes run in the background and ``write`` returns once they started; while one
        batch is still being written, the next pass's status is not written (a later pass computes it again).
        ``min_interval``: statuses are computed (and written where they changed) at most once per this many
        seconds; a pass within it is skipped and ``due`` says when the next one may write. Usage and counts move
        with every admission and finish: written at every pass, they were the largest share of our writes. A queue
        not seen before (just created) has its status at once, whatever the interval. ``max_rate``: queue status
        writes a second at most, on average: after a batch of n writes the next waits n / max_rate seconds if
        that is longer than ``min_interval`` (0: no limit). With many queues all moving at once (a storm of
        admissions) their statuses are written less often, and the admissions keep the API server. ``share``: the
        fraction of ``max_rate`` that holds now (``WriteLatency.share``)."""
        self._deferred = deferred
        self._interval = datetime.timedelta(seconds=min_interval)
        self._rate = max_rate
        self._share = share
        self._batch_writes = 0  # statuses written by the last batch (so far)
        self._computed_at: datetime.datetime | None = None
        self._due: datetime.datetime | None = None
        self._seen: set[tuple[str, str]] = set()  # queues whose status was computed at least once
        self._written_at: dict[tuple[str, str], datetime.datetime] = {}
        self._batch: asyncio.Task[None] | None = None
        self._afs = admission_fair_sharing or AdmissionFairSharing()
        self._kube = kube
        self._cache = cache
        self._metrics = metrics
        # Finished workloads already counted (by uid), None until the first pass: what had finished before this
        # replica led is not counted again, so a restart or a new leader does not inflate the counter.
        self._finished: set[str] | None = None
        self._published: set[str] = set()  # ClusterQueues with series

    async def write(
        self,
        snapshot: Snapshot,
        now: datetime.datetime,
        result: SchedulingResult | None = None,
        *,
        finished: Sequence[Workload] = (),
    ) -> None:
        """Status as of ``snapshot``; admissions of the pass that used it show up in the next one.

        Weighted shares come from ``result`` (the pass's own view, its admissions included) when it has them.
        ``finished``: finished Workloads the snapshot leaves out (counted for the finished metric).
        """
        if self._deferred and self._batch is not None and not self._batch.done():
            return
        queues = {("", cq.name) for cq in snapshot.cluster_queues} | {
            (lq.namespace, lq.name) for lq in snapshot.local_queues
        }
        new = queues - self._seen
        spacing = self._spacing()
        if not new and self._computed_at is not None and now - self._computed_at < spacing:
            self._due = self._computed_at + spacing
            return
        self._seen = queues
        self._written_at = {k: t for k, t in self._written_at.items() if k in queues}
        if not new or self._computed_at is None:
            self._computed_at, self._due = now, None
            self._batch_writes = 0
        else:
            self._due = self._computed_at + spacing  # for the others, skipped below if written lately
        # 1. What the statuses should say: counts, usage and activeness, from the core.
        self._report_lifecycle(snapshot, finished)
        counts = queuestate.count_workloads(snapshot)
        # 2. One write per queue, skipped when the object already says it.
        writes = [
            *self._cluster_queue_writes(snapshot, counts, now, result),
            *self._local_queue_writes(snapshot, counts, now),
        ]
        if result is not None:
            for name, share in result.cohort_shares:
                writes.append(self._write_cohort(name, share))
                if self._metrics is not None:
                    self._metrics.set_cohort_weighted_share(name, share)
        # 3. Concurrently: one at a time, 60 queues whose usage moves every pass held each pass up by ~1 s.
        if self._deferred:
            self._batch = asyncio.get_running_loop().create_task(_gather(writes), name="queue-status")
            return
        await asyncio.gather(*writes)

    def _cluster_queue_writes(
        self,
        snapshot: Snapshot,
        counts: queuestate.QueueCounts,
        now: datetime.datetime,
        result: SchedulingResult | None,
    ) -> list[Coroutine[Any, Any, None]]:
        cq_shares = dict(result.cluster_queue_shares) if result is not None else {}
        cycles = QuotaBook(snapshot.cluster_queues, snapshot.cohorts) if snapshot.cohorts else None
        flavors = [rf.name for rf in snapshot.flavors]
        writes = []
        for cq in snapshot.cluster_queues:
            workloads = counts.held.get(cq.name, [])
            usage = queuestate.usage_of(workloads)
            pending = counts.pending[cq.name]
            status: dict[str, Any] = {
                "pendingWorkloads": pending,
                "reservingWorkloads": len(workloads),
                "admittedWorkloads": len(workloads),
                "flavorsReservation": _flavor_usage(cq, usage, with_borrowed=True),
                "flavorsUsage": _flavor_usage(cq, usage, with_borrowed=True),
            }
            if cq.name in cq_shares:
                status["fairSharing"] = {"weightedShare": cq_shares[cq.name]}
                if self._metrics is not None:
                    self._metrics.set_weighted_share(cq.name, cq_shares[cq.name], cohort=cq.cohort or "")
            cycle = cycles.cycle_of(cq) if cycles is not None else None
            state = queuestate.cluster_queue_activeness(cq, flavors=flavors, cycle=cycle)
            writes.append(self._write(CLUSTER_QUEUE, cq.name, None, status, state, now=now))
            if self._metrics is not None:
                self._cluster_queue_metrics(cq, usage, pending=pending, held=len(workloads), active=state.active)
        return writes

    def _cluster_queue_metrics(
        self, cq: ClusterQueue, usage: Mapping[tuple[str, str], Quantity], *, pending: int, held: int, active: bool
    ) -> None:
        assert self._metrics is not None
        self._metrics.set_pending(cq.name, active=pending, inadmissible=0)
        self._metrics.set_active_workloads(cq.name, reserving=held, admitted=held)
        self._metrics.set_cluster_queue_status(cq.name, "active" if active else "pending")
        for group in cq.resource_groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    used = usage.get((flavor.name, quota.name), ZERO)
                    self._metrics.set_cluster_queue_quota(
                        cq.name,
                        flavor=flavor.name,
                        resource=quota.name,
                        nominal=_number(quota.nominal),
                        borrowing_limit=None if quota.borrowing_limit is None else _number(quota.borrowing_limit),
                        lending_limit=None if quota.lending_limit is None else _number(quota.lending_limit),
                        cohort=cq.cohort or "",
                    )
                    self._metrics.set_cluster_queue_usage(
                        cq.name,
                        flavor=flavor.name,
                        resource=quota.name,
                        reserved=_number(used),
                        used=_number(used),
                        cohort=cq.cohort or "",
                    )

    def _local_queue_writes(
        self, snapshot: Snapshot, counts: queuestate.QueueCounts, now: datetime.datetime
    ) -> list[Coroutine[Any, Any, None]]:
        cq_names = [cq.name for cq in snapshot.cluster_queues]
        fair_admission = {cq.name for cq in snapshot.cluster_queues if cq.admission_mode == USAGE_BASED}
        writes = []
        for lq in snapshot.local_queues:
            key = (lq.namespace, lq.name)
            workloads = counts.held_by_local_queue.get(key, [])
            usage_rows: dict[str, dict[str, Quantity]] = {}
            for (flavor_name, resource), q in queuestate.usage_of(workloads).items():
                usage_rows.setdefault(flavor_name, {})[resource] = q
            flavors = [
                {"name": f, "resources": [{"name": r, "total": format_quantity(q)} for r, q in sorted(rs.items())]}
                for f, rs in sorted(usage_rows.items())
            ]
            status: dict[str, Any] = {
                "pendingWorkloads": counts.pending_by_local_queue[key],
                "reservingWorkloads": len(workloads),
                "admittedWorkloads": len(workloads),
                "flavorsReservation": flavors,
                "flavorsUsage": flavors,
            }
            if self._afs.enabled and lq.cluster_queue in fair_admission:
                fair = self._admission_fair_sharing(lq, usage_rows, now)
                if fair is not None:
                    status["fairSharing"] = fair
            state = queuestate.local_queue_activeness(lq, cluster_queues=cq_names)
            writes.append(self._write(LOCAL_QUEUE, lq.name, lq.namespace, status, state, now=now))
        return writes

    def _admission_fair_sharing(
        self, lq: LocalQueue, usage_rows: Mapping[str, Mapping[str, Quantity]], now: datetime.datetime
    ) -> dict[str, Any] | None:
        held_now: dict[str, float] = {}
        for resources in usage_rows.values():
            for resource, q in resources.items():
                held_now[resource] = held_now.get(resource, 0.0) + q.nano / 1e9
        sample = next_consumed(lq.consumed, lq.last_update, held_now, now, self._afs)
        if sample is None:
            return None
        consumed, at = sample
        return {
            "weightedShare": 0,
            "admissionFairSharingStatus": {
                "consumedResources": {r: format_quantity(Quantity(round(v * 1e9))) for r, v in consumed.items()},
                "lastUpdate": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }

    def due(self) -> datetime.datetime | None:
        """When a status skipped within ``min_interval`` may be written (None: nothing was skipped)."""
        return self._due

    def _spacing(self) -> datetime.timedelta:
        """From one batch of statuses to the next: ``min_interval``, or longer after a large batch."""
        if not self._rate:
            return self._interval
        return max(self._interval, datetime.timedelta(seconds=self._batch_writes / (self._rate * self._share())))

    def cancel(self) -> None:
        """Give up the batch being written in the background (the reconciler stops)."""
        if self._batch is not None:
            self._batch.cancel()

    async def drain(self) -> None:
        """Wait for the batch being written in the background."""
        if self._batch is not None:
            await asyncio.gather(self._batch, return_exceptions=True)

    async def _write_cohort(self, name: str, share: int) -> None:
        obj = self._cache.cohort(name)
        if obj is None:
            return  # a cohort named only by ClusterQueues has no object to carry a status
        fields = {"fairSharing": {"weightedShare": share}}
        current = obj.status
        if all(current.get(k) == v for k, v in fields.items()):
            return
        try:
            written = await self._kube.replace_status(COHORT, dict(obj.raw) | {"status": dict(current) | fields})
        except errors.KubeError as exc:
            log.info("cohort status not written: %s", exc)
            return
        self._cache.observe(COHORT, written, quiet=True)

    def _report_lifecycle(self, snapshot: Snapshot, left_out: Sequence[Workload]) -> None:
        """Count workloads that finished since the last pass; drop the series of ClusterQueues that are gone."""
        if self._metrics is None:
            return
        every = (*snapshot.workloads, *left_out)
        finished = {wl.uid or f"{wl.namespace}/{wl.name}": wl for wl in every if wl.finished}
        if self._finished is not None:
            for key in finished.keys() - self._finished:
                admission = finished[key].admission
                if admission is not None:  # finished without ever being admitted: no queue to count it in
                    self._metrics.workload_finished(admission.cluster_queue)
        self._finished = set(finished)
        names = {cq.name for cq in snapshot.cluster_queues}
        for gone in self._published - names:
            self._metrics.forget_cluster_queue(gone)
        self._published = names

    async def _write(
        self,
        resource: Any,
        name: str,
        namespace: str | None,
        fields: dict[str, Any],
        state: queuestate.Activeness,
        *,
        now: datetime.datetime,
    ) -> None:
        obj = self._cache.cluster_queue(name) if namespace is None else self._cache.local_queue(namespace, name)
        if obj is None:
            return
        current = obj.status
        same_fields = all(current.get(k) == v for k, v in fields.items())
        active, reason, message = state.active, state.reason, state.message
        same_active = conditions.same(
            current.get("conditions"), kind="Active", status=active, reason=reason, message=message
        )
        if same_fields and same_active:
            return
        key = (namespace or "", name)
        last = self._written_at.get(key)
        if last is not None and now - last < self._interval:
            # Computed early for a new queue: the others keep to their interval.
            self._due = min(self._due or (last + self._interval), last + self._interval)
            return
        self._written_at[key] = now
        self._batch_writes += 1
        status = dict(current) | fields
        status["conditions"] = conditions.set_condition(
            current.get("conditions"), kind="Active", status=active, reason=reason, message=message, now=now
        )
        try:
            written = await self._kube.replace_status(resource, dict(obj.raw) | {"status": status})
        except errors.KubeError as exc:
            log.info("queue status not written: %s", exc)
            return
        # Quiet: a queue's status is what it reports, not what decides; writing it must not start another pass.
        self._cache.observe(resource, written, quiet=True)


async def _gather(writes: list[Coroutine[Any, Any, None]]) -> None:
    await asyncio.gather(*writes)


def _number(q: Quantity) -> float:
    return q.nano / 1e9
