"""The scheduling step of the reconciler: snapshot the cache, ask ``webhook.core``, commit what it decided.

1. ``Snapshotter``: the queues and unfinished Workloads, parsed and kept from pass to pass, with the admissions
   assumed in ``Reservations`` counted as held; a pass that finds nothing schedulable changed decides nothing.
2. ``core.schedule`` decides admissions, preemptions and pending reasons (pure, deterministic).
3. Preemptions: victims get ``Evicted``/``Preempted``; their jobs stop and their quota is released later
   (by the job side), so the preemptor is admitted in a later pass, never on quota still in use.
4. Admissions: every one is assumed in memory *before* the first write starts, then written concurrently
   through the status subresource with the resourceVersion read; a refused write releases its reservation,
   an ambiguous one keeps it until the cache shows what the server has.
5. ``PendingReasons``: why the front of each queue waits, written when it changes, a bounded number per pass.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Awaitable, Mapping
from typing import Any

from webhook.api import conditions
from webhook.api.constants import EVICTED_BY_PREEMPTION, PENDING_REASON_POSITIONS
from webhook.api.views import ObjectView, WorkloadRecord
from webhook.api.workload import Workload
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.pendingreasons import PendingReasons
from webhook.controller.ratelimit import TokenBucket, WriteLatency
from webhook.controller.reservations import Reservations
from webhook.controller.snapshotter import Snapshotter, version
from webhook.controller.telemetry import QueueMetrics
from webhook.controller.workqueue import WorkQueue
from webhook.core.admissionfairsharing import AdmissionFairSharing
from webhook.core.backlog import Backlog
from webhook.core.decisions import (
    RETRY_ON_TIME,
    AdmissionDecision,
    SchedulingResult,
    admission_status,
)
from webhook.core.fairsharing import FairSharing
from webhook.core.scheduler import schedule
from webhook.core.snapshot import Snapshot
from webhook.jobs import workload as wl_life
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import WORKLOAD
from webhook.logs import object_fields

log = logging.getLogger(__name__)
Key = tuple[str, str]


class Admitter:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        *,
        events: EventRecorder,
        reservations: Reservations | None = None,
        metrics: QueueMetrics | None = None,
        write_concurrency: int = 32,
        pending_writes_per_pass: int = 200,
        pending_positions: int = PENDING_REASON_POSITIONS,
        pending_refresh: datetime.timedelta = datetime.timedelta(seconds=15),
        pending_settle: datetime.timedelta = datetime.timedelta(0),
        pending_limit: TokenBucket | None = None,
        latency: WriteLatency | None = None,
        fair_sharing: FairSharing | None = None,
        admission_fair_sharing: AdmissionFairSharing | None = None,
        deferred: bool = False,
        min_spacing: float = 0.0,
    ) -> None:
        """``deferred``: what is only information (events, pending reasons) is written in the background, so a
        pass (and the next admission) never waits for it; a pass that finds the previous pending reasons still
        being written leaves them to a later pass. ``min_spacing``: seconds from one scheduling to the next at
        least, and at least as long as the last one took (changes in between are scheduled together).
        ``pending_settle``: how long a Workload waits in the front of its queue before its first reason is
        written (one admitted sooner never gets one). ``pending_limit``: the rate of reason writes (None: no
        limit). ``latency``: told how long each admission write took (the information writes' rates follow it)."""
        self._min_spacing = min_spacing
        self._spaced_at: datetime.datetime | None = None
        self._deferred = deferred
        self._kube = kube
        self._cache = cache
        self._fair_sharing = fair_sharing
        self._admission_fair_sharing = admission_fair_sharing
        self._events = events
        self._latency = latency
        self.reservations = reservations or Reservations()
        self._metrics = metrics
        self._gate = asyncio.Semaphore(write_concurrency)
        self._snapshots = Snapshotter(cache)
        self._reasons = PendingReasons(
            kube,
            cache,
            self.reservations,
            event=self._event,
            # Pending reasons have a gate of their own: written in the background, they must never make the next
            # pass's admissions queue behind them.
            gate=asyncio.Semaphore(max(1, write_concurrency // 4)) if deferred else self._gate,
            budget=pending_writes_per_pass,
            positions=pending_positions,
            refresh=pending_refresh,
            settle=pending_settle,
            deferred=deferred,
            limit=pending_limit,
        )
        # Fair sharing's shares move with every admission: with it, every pass schedules.
        self._gated = not (fair_sharing is not None and fair_sharing.enabled) and not (
            admission_fair_sharing is not None and admission_fair_sharing.enabled
        )
        self._last_result: SchedulingResult | None = None
        # The last pass explained nothing: no reason could have been written then (the limit had no token, or the
        # previous reasons were still being written). Explaining costs a third of a pass that admits nothing.
        self._unexplained = False
        self._requeue_due: datetime.datetime | None = None
        # Admissions the server refused (invalid, forbidden: not a conflict, which is read again and retried at
        # once): not written again before their backoff, however often the scheduler picks them.
        self._admit_retries: WorkQueue[Key] = WorkQueue(initial=0.5, cap=30.0)
        self.schedules = 0  # how many passes ran the scheduler (the others found nothing schedulable changed)

    @property
    def backlog(self) -> Backlog:
        """The pending Workloads the next pass reads its queues from (kept in step with ``snapshot``)."""
        return self._snapshots.backlog

    # -- 1. snapshot ----------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """What the scheduler decides on: the cache's queues and unfinished Workloads, with the admissions assumed
        (kept from pass to pass by the ``Snapshotter``)."""
        return self._snapshots.take(self.reservations)

    def finished(self) -> list[Workload]:
        """The finished Workloads, which ``snapshot`` leaves out."""
        return self._snapshots.finished()

    def needs_scheduling(self, now: datetime.datetime) -> bool:
        """Whether the last snapshot can lead to another decision than the last pass's: something schedulable
        changed (a Workload added, requeued, freed quota or changed otherwise than by our own admission; a queue,
        flavor, cohort or namespace), a requeue backoff ended, or ``invalidate`` was called. With fair sharing
        (whose shares move with every admission) always."""
        if not self._gated or self._last_result is None:
            return True
        if self._snapshots.dirty:
            return self._spaced_at is None or now >= self._spaced_at
        if self._unexplained and self._reasons.ready(now):
            return True  # the last pass left its reasons unexplained, and they can be written now
        due = self._schedule_due()  # a reason's settle ending writes the reason, it does not schedule
        return due is not None and now >= due

    def invalidate(self) -> None:
        """Schedule at the next pass whatever changed (the periodic resync: when in doubt, schedule)."""
        self._snapshots.dirty = True

    def due(self) -> datetime.datetime | None:
        """When a requeue backoff of a pending Workload, or a refused admission's, ends (the next pass must
        schedule then), or a pending reason's settle."""
        return min((t for t in (self._schedule_due(), self._reasons.due()) if t is not None), default=None)

    def _schedule_due(self) -> datetime.datetime | None:
        retry = self._admit_retries.next_retry()
        spaced = self._spaced_at if self._snapshots.dirty else None
        return min((t for t in (self._requeue_due, retry, spaced) if t is not None), default=None)

    # -- 2..5. one pass -------------------------------------------------------------------------------------

    async def run_pass(self, now: datetime.datetime) -> tuple[Snapshot, SchedulingResult]:
        """One pass; returns the snapshot it decided on and what it decided."""
        started = time.perf_counter()
        snapshot = self.snapshot()
        if not self.needs_scheduling(now) and self._last_result is not None:
            # Nothing schedulable changed: the last decision stands. Only its pending reasons may still be owed (if
            # it explained them: else the pass that can write them schedules again).
            if not self._unexplained:
                await self._reasons.catch_up(self._last_result.pending, now, self.backlog)
            return snapshot, self._last_result
        snapshots = self._snapshots
        snapshots.dirty = False
        self._admit_retries.take(now)  # the refused admissions whose backoff ended may be written again
        snapshots.trim(snapshot.workloads)
        # Reasons are written for the front of each queue only (``PendingReasons``), and only when one can be
        # written now: the rest is not explained.
        explain = self._reasons.ready(now)
        result = schedule(
            snapshot,
            now=now,
            fair_sharing=self._fair_sharing,
            admission_fair_sharing=self._admission_fair_sharing,
            demands=snapshots.demands,
            backlog=snapshots.backlog,
            positions=self._reasons.positions if explain else 0,
        )
        self._unexplained = not explain
        if self._min_spacing:
            # The next pass schedules no sooner than this one took (at least ``min_spacing``): under a stream of
            # changes, scheduling on every one kept the loop busy re-deciding what had barely changed.
            spacing = max(self._min_spacing, time.perf_counter() - started)
            self._spaced_at = now + datetime.timedelta(seconds=spacing)
        self.schedules += 1
        self._last_result = result
        self._requeue_due = self._next_requeue(result, now)
        if self._metrics is not None:
            self._metrics.admission_attempt(
                "success" if result.admitted else "inadmissible", time.perf_counter() - started
            )

        writes: list[Awaitable[None]] = []
        for preemption in result.preemptions:
            for victim in preemption.victims:
                writes.append(
                    self._evict_victim(victim.workload, victim.reason, victim.message, preemption.cluster_queue, now)
                )
        for decision in result.admitted:
            record = self._cache.workload(*decision.workload)
            if record is None or decision.workload in self.reservations:
                continue
            if self._admit_retries.backing_off(decision.workload, now):
                continue
            admission = admission_status(decision)
            self.reservations.assume(decision.workload, admission, base_version=version(record))
            snapshots.assumed(decision.workload, admission)
            writes.append(self._admit(record, decision, admission, now))
        if explain:
            writes += self._reasons.decided(result.pending, now, snapshots.backlog)
        else:
            self._reasons.unexplained(now)
        if writes:
            await asyncio.gather(*writes)
        return snapshot, result

    def _next_requeue(self, result: SchedulingResult, now: datetime.datetime) -> datetime.datetime | None:
        """The earliest end of a requeue backoff among the Workloads left pending for it."""
        times = (
            wl.requeue_at
            for p in result.pending
            if p.retry_on == RETRY_ON_TIME and (wl := self._snapshots.workload(p.workload)) is not None
        )
        return min((t for t in times if t is not None and t > now), default=None)

    def cancel(self) -> None:
        """Give up what is being written in the background (the reconciler stops)."""
        self._reasons.cancel()
        self._events.cancel()

    async def drain(self) -> None:
        """Wait for the pending reasons and events being written in the background."""
        await self._reasons.drain()
        await self._events.drain()

    def _event(self, obj: ObjectView, **fields: Any) -> Awaitable[None] | None:
        if self._deferred:
            self._events.record_later(obj, **fields)
            return None
        return self._events.record(obj, **fields)

    async def _admit(
        self,
        workload: WorkloadRecord,
        decision: AdmissionDecision,
        admission: Mapping[str, Any],
        now: datetime.datetime,
    ) -> None:
        key = decision.workload
        landing = self._reasons.landing(key)
        if landing is not None:
            # A reason begun before this pass decided: the admission follows it, on the version it wrote when
            # that is the only change since the version decided on (a reason changes nothing the decision read).
            landed = await asyncio.shield(landing)
            current = self._cache.workload(*key)
            if landed is not None and current is not None and landed == (version(workload), version(current)):
                workload = current
        try:
            async with self._gate:
                sent = time.monotonic()
                written = await self._kube.replace_status(WORKLOAD, wl_life.admitted(workload, admission, now=now))
                if self._latency is not None:
                    self._latency.observe(time.monotonic() - sent)
        except (errors.Conflict, errors.NotFound, errors.Invalid, errors.Forbidden) as exc:
            self.reservations.refused(key)
            # The scheduler took it as admitted: it is pending again (when in doubt, schedule).
            self._snapshots.note(key, self._snapshots.workload(key))
            if isinstance(exc, errors.Conflict):
                log.info("admission not written (conflict); will retry", extra=object_fields(workload.raw))
                await self._refresh(workload)
                self._cache.wake()  # decide again on the version read, not at the next resync
            else:
                delay = self._admit_retries.failed(key, now)
                log.info(
                    "admission not written (%s); retrying in %.1fs",
                    exc.__class__.__name__,
                    delay,
                    extra=object_fields(workload.raw),
                )
            return
        except errors.KubeError as exc:
            self.reservations.unknown(key)
            log.warning("admission write outcome unknown: %s", exc, extra=object_fields(workload.raw))
            return
        self._cache.observe(WORKLOAD, written)
        self.reservations.confirmed(key)
        self._admit_retries.succeeded((key,))
        wait = (now - _created(workload)).total_seconds()
        if self._metrics is not None:
            self._metrics.quota_reserved(decision.cluster_queue, wait)
            self._metrics.workload_admitted(decision.cluster_queue, wait)
        note = f"Quota reserved in ClusterQueue {decision.cluster_queue}, wait time since queued was {wait:.0f}s"
        admitted = WorkloadRecord.of(written)
        for event in (
            self._event(admitted, type="Normal", reason="QuotaReserved", message=note, now=now),
            self._event(
                admitted, type="Normal", reason="Admitted", message=f"Admitted by ClusterQueue {decision.cluster_queue}"
            ),
        ):
            if event is not None:
                await event

    async def _evict_victim(
        self, key: Key, reason: str, message: str, preempting_cq: str, now: datetime.datetime
    ) -> None:
        workload = self._cache.workload(*key)
        if (
            workload is None
            or (status := self._cache.typed_workload(workload).status).evicted
            or not status.holds_quota
        ):
            return  # already on its way out: evicting twice would only reset its clock
        body = wl_life.evicted(
            workload, reason=EVICTED_BY_PREEMPTION, message=message, now=now, preempted_reason=reason
        )
        try:
            async with self._gate:
                written = await self._kube.replace_status(WORKLOAD, body)
        except errors.KubeError as exc:
            log.info("preemption not written (%s); the next pass decides again", exc, extra=object_fields(workload.raw))
            if isinstance(exc, errors.Conflict):
                await self._refresh(workload)
            return
        self._cache.observe(WORKLOAD, written)
        cq = status.admission.cluster_queue if status.admission is not None else ""
        if self._metrics is not None:
            self._metrics.workload_preempted(preempting_cq, reason)
            self._metrics.workload_evicted(cq, EVICTED_BY_PREEMPTION)
        event = self._event(WorkloadRecord.of(written), type="Normal", reason="Preempted", message=message, now=now)
        if event is not None:
            await event

    async def _refresh(self, workload: WorkloadRecord) -> None:
        """Read a Workload our write found changed, so the next pass decides on what the server has rather than
        retrying the same write against the version the watch has not delivered yet."""
        meta = workload.metadata
        try:
            async with self._gate:
                fresh = await self._kube.get(WORKLOAD, meta.get("name", ""), namespace=meta.get("namespace"))
        except errors.KubeError:
            return
        self._cache.observe(WORKLOAD, fresh)


def _created(workload: ObjectView) -> datetime.datetime:
    stamp = workload.metadata.get("creationTimestamp")
    return conditions.parse_time(stamp) if stamp else datetime.datetime.now(datetime.UTC)
