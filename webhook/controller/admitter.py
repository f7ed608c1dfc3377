"""The scheduling step of the reconciler: snapshot the cache, ask ``webhook.core``, commit what it decided.

1. Build a ``Snapshot`` from the cache, counting admissions assumed in ``Reservations`` as held.
2. ``core.schedule`` decides admissions, preemptions and pending reasons (pure, deterministic).
3. Preemptions: victims get ``Evicted``/``Preempted``; their jobs stop and their quota is released later
   (by the job side), so the preemptor is admitted in a later pass, never on quota still in use.
4. Admissions: every one is assumed in memory *before* the first write starts, then written concurrently
   through the status subresource with the resourceVersion read; a refused write releases its reservation,
   an ambiguous one keeps it until the cache shows what the server has.
5. Pending reasons: written when they change (not when only the queue position moves), heads first, a bounded
   number per pass so a deep queue cannot stall the loop. When only the numbers in the message moved (free and
   used quota change with every admission), a Workload is rewritten at most once per ``pending_refresh``: with
   hundreds waiting, rewriting every one on every pass (a status write and two events each) made the API
   writes for information outweigh the writes that admit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from webhook.api import conditions
from webhook.api.clusterqueue import parse_cluster_queue
from webhook.api.cohort import parse_cohort
from webhook.api.constants import COND_EVICTED, COND_QUOTA_RESERVED, EVICTED_BY_PREEMPTION, PENDING_REASON_POSITIONS
from webhook.api.flavor import parse_resource_flavor
from webhook.api.localqueue import parse_local_queue
from webhook.api.views import ObjectView, WorkloadRecord, entries
from webhook.api.workload import Workload, parse_admission, parse_workload
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.reservations import Reservations
from webhook.controller.telemetry import QueueMetrics
from webhook.controller.workqueue import WorkQueue
from webhook.core.admissionfairsharing import AdmissionFairSharing
from webhook.core.backlog import Backlog
from webhook.core.decisions import (
    RETRY_ON_TIME,
    AdmissionDecision,
    PendingDecision,
    SchedulingResult,
    admission_status,
)
from webhook.core.demand import DemandCache
from webhook.core.fairsharing import FairSharing
from webhook.core.scheduler import schedule
from webhook.core.snapshot import Snapshot
from webhook.jobs import workload as wl_life
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object
from webhook.kube.resources import NAMESPACE, WORKLOAD
from webhook.logs import object_fields

log = logging.getLogger(__name__)
Key = tuple[str, str]
T = TypeVar("T")


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
        written (one admitted sooner never gets one)."""
        self._min_spacing = min_spacing
        self._demands = DemandCache()  # kept from pass to pass: most Workloads are the same objects as last time
        # The pending Workloads of the snapshot by LocalQueue and shape, in queue order, kept in step with it by
        # ``snapshot`` (every change it notes): a pass reads only the queues' fronts instead of sorting them all.
        self._backlog = Backlog(self._demands)
        self._spaced_at: datetime.datetime | None = None
        self._deferred = deferred
        self._pending_task: asyncio.Task[None] | None = None
        self._kube = kube
        self._cache = cache
        self._fair_sharing = fair_sharing
        self._admission_fair_sharing = admission_fair_sharing
        self._events = events
        self.reservations = reservations or Reservations()
        self._metrics = metrics
        self._gate = asyncio.Semaphore(write_concurrency)
        # Pending reasons have a gate of their own: written in the background, they must never make the next
        # pass's admissions queue behind them.
        self._info_gate = asyncio.Semaphore(max(1, write_concurrency // 4)) if deferred else self._gate
        self._pending_budget = pending_writes_per_pass
        # Reasons are written for the first ``pending_positions`` waiting in each ClusterQueue (and for every
        # workload that cannot queue at all): as in Kueue, whose reasons are those of the heads it tried. What
        # waits further back is listed, with its position and reason, by the visibility API and `turnstile
        # workloads --pending`; writing each of them (and rewriting it as the numbers moved) was a third of our
        # Workload writes in a deep backlog.
        self._pending_positions = pending_positions
        self._pending_refresh = pending_refresh
        self._pending_written: dict[Key, datetime.datetime] = {}  # when this process last wrote a reason
        # Reasons being written now, each settling to (the version it was built on, the version written), or None
        # if not written: an admission decided meanwhile waits for it and builds on what it wrote, instead of
        # conflicting with our own write (a failed write, a read and another pass).
        self._reasons_landing: dict[Key, asyncio.Future[tuple[int, int] | None]] = {}
        # A Workload's first reason waits until it has been in the front for ``pending_settle``: in a queue that
        # moves, most Workloads pass through the front in a second or two, and a reason written for each (a
        # status write and its events) was a third of the API requests per admission while draining a backlog.
        self._pending_settle = pending_settle
        self._pending_since: dict[Key, datetime.datetime] = {}  # first seen in the front with no reason yet
        self._pending_due: datetime.datetime | None = None  # the earliest end of a settle
        # Parsing is the costly part of a snapshot; objects are re-parsed only when their version changes.
        self._parsed: dict[Key, tuple[str, Workload | None]] = {}
        self._parsed_queues: dict[str, dict[Key, tuple[str, Any]]] = {}  # by kind, as ``_parsed``
        self._bad: set[tuple[str, str, str]] = set()
        # The Workload part of the snapshot, kept from pass to pass (None until the first): the parsed Workloads
        # that go into it, fed by the cache's journal (quiet changes too: they change the objects).
        self._journal = cache.journal(quiet=True)
        self._effective: dict[Key, Workload] | None = None
        self._finished: dict[Key, Workload] = {}
        self._overlaid: set[Key] = set()  # keys shown with an assumed admission in the last snapshot
        # What the scheduler saw of each Workload (``_view``), and whether anything changed since it last ran.
        # Fair sharing's shares move with every admission: it schedules every pass, as before.
        self._views: dict[Key, tuple[Any, ...]] = {}
        self._dirty = True
        self._gated = not (fair_sharing is not None and fair_sharing.enabled) and not (
            admission_fair_sharing is not None and admission_fair_sharing.enabled
        )
        self._last_namespaces: dict[str, Any] | None = None
        self._last_result: SchedulingResult | None = None
        self._requeue_due: datetime.datetime | None = None
        self._pending_owed = False
        # Admissions the server refused (invalid, forbidden: not a conflict, which is read again and retried at
        # once): not written again before their backoff, however often the scheduler picks them.
        self._admit_retries: WorkQueue[Key] = WorkQueue(initial=0.5, cap=30.0)
        self.schedules = 0  # how many passes ran the scheduler (the others found nothing schedulable changed)

    @property
    def backlog(self) -> Backlog:
        """The pending Workloads the next pass reads its queues from (kept in step with ``snapshot``)."""
        return self._backlog

    # -- 1. snapshot ----------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """What the scheduler decides on: the cache's queues and unfinished Workloads, with the admissions assumed.

        The Workload part is kept from pass to pass: only the Workloads the cache saw change are read again (all
        of them after a journal overflow), and whether any change can alter a decision is noted for
        ``needs_scheduling``.
        """
        changed = self._journal.take()
        rebuilt = changed is None or self._effective is None
        if changed is None or self._effective is None:
            touched = self._rebuild()
        else:
            touched = {(key.namespace, key.name) for key in changed.get(WORKLOAD, ())}
            for key in touched:
                self._update(key, self._cache.workload(*key))
        assert self._effective is not None
        assumed_keys = list(self.reservations.keys())
        versions = {key: _version(seen) for key in assumed_keys if (seen := self._cache.workload(*key))}
        self.reservations.settle(versions)
        overlaid: dict[Key, Workload] = {}
        for key in assumed_keys:
            wl = self._effective.get(key)
            assumed = self.reservations.admission_for(key)
            if wl is not None and assumed is not None and wl.admission is None:
                overlaid[key] = dataclasses.replace(wl, admission=parse_admission(assumed))
        # An assumption that ended (written, refused, settled) changes what the scheduler sees as held.
        for key in touched | (overlaid.keys() ^ self._overlaid):
            wl = overlaid.get(key) or self._effective.get(key)
            self._note(key, wl)
            if not rebuilt:
                self._backlog.put(key, wl)
        self._overlaid = set(overlaid)
        if overlaid:
            workloads = [wl for key, wl in self._effective.items() if key not in overlaid] + list(overlaid.values())
        else:
            workloads = list(self._effective.values())
        if rebuilt:
            self._backlog = Backlog.of(workloads, self._demands)
        namespaces = {ns.metadata.get("name", ""): ns.labels for ns in self._cache.views(NAMESPACE, ObjectView)}
        if namespaces != self._last_namespaces:
            self._last_namespaces, self._dirty = namespaces, True
        cache = self._cache  # the queue objects read, then parsed (again only where their version changed)
        queues, flavors, local_queues, cohorts = (
            cache.cluster_queues(),
            cache.resource_flavors(),
            cache.local_queues(),
            cache.cohorts(),
        )
        return Snapshot(
            cluster_queues=self._parse_all(queues, "ClusterQueue", parse_cluster_queue),
            flavors=self._parse_all(flavors, "ResourceFlavor", parse_resource_flavor),
            local_queues=self._parse_all(local_queues, "LocalQueue", parse_local_queue),
            workloads=workloads,
            namespaces=namespaces,
            cohorts=self._parse_all(cohorts, "Cohort", parse_cohort),
        )

    def _rebuild(self) -> set[Key]:
        """Every Workload read again (the first pass, or after the journal overflowed); returns their keys."""
        self._effective, self._finished = {}, {}
        live: set[Key] = set()
        for workload in self._cache.workloads():
            key = (workload.metadata.get("namespace", ""), workload.metadata.get("name", ""))
            live.add(key)
            self._update(key, workload)
        gone = set(self._parsed) - live
        for key in gone:
            self._update(key, None)
        self._dirty = True
        return live | gone | set(self._views)

    def _update(self, key: Key, workload: WorkloadRecord | None) -> None:
        """Read one Workload again (if its version changed) into the snapshot's part kept from pass to pass."""
        assert self._effective is not None
        wl: Workload | None = None
        if workload is not None:
            meta = workload.metadata
            rv = str(meta.get("resourceVersion", ""))
            cached = self._parsed.get(key)
            if cached is None or cached[0] != rv:
                cached = (rv, self._parse(workload, "Workload", parse_workload))
                self._parsed[key] = cached
            wl = cached[1]
            if wl is not None and meta.get("deletionTimestamp") and wl.admission is None:
                wl = None  # being deleted: never admitted again (one that holds quota keeps counting)
        else:
            self._parsed.pop(key, None)
        self._effective.pop(key, None)
        self._finished.pop(key, None)
        if wl is not None:
            # Finished ones hold nothing and wait for nothing: the scheduler never sees them (with a Job's
            # retention they are most of the cache); only the queue status counts them.
            (self._finished if wl.finished else self._effective)[key] = wl

    def _note(self, key: Key, wl: Workload | None) -> None:
        """Remember what the scheduler will see of this Workload; a difference from what it saw last time (or
        from what its own admission made of it) means scheduling again may decide differently."""
        view = _view(wl)
        if view != self._views.get(key):
            self._dirty = True
        if view is None:
            self._views.pop(key, None)
        else:
            self._views[key] = view

    def finished(self) -> list[Workload]:
        """The finished Workloads, which ``snapshot`` leaves out."""
        return list(self._finished.values())

    def needs_scheduling(self, now: datetime.datetime) -> bool:
        """Whether the last snapshot can lead to another decision than the last pass's: something schedulable
        changed (a Workload added, requeued, freed quota or changed otherwise than by our own admission; a queue,
        flavor, cohort or namespace), a requeue backoff ended, or ``invalidate`` was called. With fair sharing
        (whose shares move with every admission) always."""
        if not self._gated or self._last_result is None:
            return True
        if self._dirty:
            return self._spaced_at is None or now >= self._spaced_at
        due = self._schedule_due()  # a reason's settle ending writes the reason, it does not schedule
        return due is not None and now >= due

    def invalidate(self) -> None:
        """Schedule at the next pass whatever changed (the periodic resync: when in doubt, schedule)."""
        self._dirty = True

    def due(self) -> datetime.datetime | None:
        """When a requeue backoff of a pending Workload, or a refused admission's, ends (the next pass must
        schedule then)."""
        writing = self._pending_task is not None and not self._pending_task.done()
        settled = None if writing else self._pending_due  # owed reasons wait for the writes in flight
        return min((t for t in (self._schedule_due(), settled) if t is not None), default=None)

    def _schedule_due(self) -> datetime.datetime | None:
        retry = self._admit_retries.next_retry()
        spaced = self._spaced_at if self._dirty else None
        return min((t for t in (self._requeue_due, retry, spaced) if t is not None), default=None)

    def _parse(self, obj: ObjectView, kind: str, parse: Callable[[Mapping[str, Any]], T]) -> T | None:
        """``obj`` decoded into the scheduler's type for ``kind`` (from the object as sent: ``parse`` is
        ``webhook.api``'s decoder); None, said once per version, when it is malformed."""
        try:
            return parse(obj.raw)
        except ValueError as exc:
            meta = obj.metadata
            marker = (kind, f"{meta.get('namespace', '')}/{meta.get('name', '')}", str(meta.get("resourceVersion")))
            if marker not in self._bad:  # say it once per version, not once per pass
                self._bad.add(marker)
                log.warning("ignoring malformed %s: %s", kind, exc, extra=object_fields(obj.raw))
            return None

    def _parse_all(self, objs: list[ObjectView], kind: str, parse: Callable[[Mapping[str, Any]], T]) -> list[T]:
        """Queues, flavors and cohorts, parsed again only when their version changes (like Workloads): every pass
        took them all, and a ClusterQueue changes far less often than passes run."""
        cache: dict[Key, tuple[str, Any]] = self._parsed_queues.setdefault(kind, {})
        out: list[T] = []
        live: set[Key] = set()
        for obj in objs:
            meta = obj.metadata
            key = (meta.get("namespace", ""), meta.get("name", ""))
            rv = str(meta.get("resourceVersion", ""))
            live.add(key)
            cached = cache.get(key)
            if cached is None or cached[0] != rv or not rv:
                parsed = self._parse(obj, kind, parse)
                if cached is None or parsed != cached[1]:
                    self._dirty = True  # a status we wrote parses the same: only the spec's changes count
                cached = (rv, parsed)
                cache[key] = cached
            if cached[1] is not None:
                out.append(cached[1])
        for gone in set(cache) - live:
            del cache[gone]
            self._dirty = True
        return out

    # -- 2..5. one pass -------------------------------------------------------------------------------------

    async def run_pass(self, now: datetime.datetime) -> tuple[Snapshot, SchedulingResult]:
        """One pass; returns the snapshot it decided on and what it decided."""
        started = time.perf_counter()
        snapshot = self.snapshot()
        if not self.needs_scheduling(now) and self._last_result is not None:
            # Nothing schedulable changed: the last decision stands. Only its pending reasons may still be owed.
            if self._pending_owed and not self._deferred:
                self._pending_owed = False
                await _gather(self._pending_writes(self._last_result.pending, now))
            elif self._pending_owed and (self._pending_task is None or self._pending_task.done()):
                self._start_pending(self._last_result.pending, now)
            return snapshot, self._last_result
        self._dirty = False
        self._admit_retries.take(now)  # the refused admissions whose backoff ended may be written again
        if len(self._demands) > 2 * len(snapshot.workloads) + 1_000:
            self._demands = DemandCache()  # what it holds is mostly of Workloads gone or changed
            self._backlog = Backlog.of(snapshot.workloads, self._demands)  # its lines are keyed by those demands
        # Reasons are written for the front of each queue only (``_pending_writes``): the rest is not explained.
        result = schedule(
            snapshot,
            now=now,
            fair_sharing=self._fair_sharing,
            admission_fair_sharing=self._admission_fair_sharing,
            demands=self._demands,
            backlog=self._backlog,
            positions=self._pending_positions,
        )
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
            self.reservations.assume(decision.workload, admission, base_version=_version(record))
            # What the next snapshot shows of it (assumed, then written) is this pass's own doing: no reason to
            # schedule again.
            wl = self._effective.get(decision.workload) if self._effective is not None else None
            view = _view(dataclasses.replace(wl, admission=parse_admission(admission))) if wl is not None else None
            if view is not None:
                self._views[decision.workload] = view
            writes.append(self._admit(record, decision, admission, now))
        if not self._deferred:
            writes += self._pending_writes(result.pending, now)
        elif self._pending_task is None or self._pending_task.done():
            self._start_pending(result.pending, now)
        else:
            self._pending_owed = True  # the previous reasons are still being written: these are owed
        if writes:
            await asyncio.gather(*writes)
        return snapshot, result

    def _start_pending(self, pending: tuple[PendingDecision, ...], now: datetime.datetime) -> None:
        self._pending_owed = False
        writes = self._pending_writes(pending, now)
        if writes:
            self._pending_task = asyncio.get_running_loop().create_task(_gather(writes), name="pending-reasons")

    def _next_requeue(self, result: SchedulingResult, now: datetime.datetime) -> datetime.datetime | None:
        """The earliest end of a requeue backoff among the Workloads left pending for it."""
        effective = self._effective or {}
        times = (
            wl.requeue_at
            for p in result.pending
            if p.retry_on == RETRY_ON_TIME and (wl := effective.get(p.workload)) is not None
        )
        return min((t for t in times if t is not None and t > now), default=None)

    def cancel(self) -> None:
        """Give up what is being written in the background (the reconciler stops)."""
        if self._pending_task is not None:
            self._pending_task.cancel()
        self._events.cancel()

    async def drain(self) -> None:
        """Wait for the pending reasons and events being written in the background."""
        if self._pending_task is not None:
            await asyncio.gather(self._pending_task, return_exceptions=True)
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
        landing = self._reasons_landing.get(key)
        if landing is not None:
            # A reason begun before this pass decided: the admission follows it, on the version it wrote when
            # that is the only change since the version decided on (a reason changes nothing the decision read).
            landed = await asyncio.shield(landing)
            current = self._cache.workload(*key)
            if landed is not None and current is not None and landed == (_version(workload), _version(current)):
                workload = current
        try:
            async with self._gate:
                written = await self._kube.replace_status(WORKLOAD, wl_life.admitted(workload, admission, now=now))
        except (errors.Conflict, errors.NotFound, errors.Invalid, errors.Forbidden) as exc:
            self.reservations.refused(key)
            # The scheduler took it as admitted: it is pending again (when in doubt, schedule).
            self._note(key, (self._effective or {}).get(key))
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

    def _pending_writes(self, pending: tuple[PendingDecision, ...], now: datetime.datetime) -> list[Awaitable[None]]:
        writes: list[Awaitable[None]] = []
        # Forgotten once no longer pending (not merely out of the front: one back in it within the refresh keeps its
        # limit, as when every position was explained).
        waiting = {p.workload for p in pending}
        backlog = self._backlog
        self._pending_written = {k: t for k, t in self._pending_written.items() if k in waiting or k in backlog}
        front = self._pending_positions
        in_front = [p for p in pending if p.position is None or p.position <= front]
        since = self._pending_since
        self._pending_since = {k: t for k in (p.workload for p in in_front) if (t := since.get(k)) is not None}
        self._pending_due = None
        for decision in sorted(in_front, key=_heads_first):
            if len(writes) >= self._pending_budget:
                self._pending_owed = True  # the rest in a later pass, from this decision if nothing changes
                break
            workload = self._cache.workload(*decision.workload)
            if workload is None or _says(workload, decision):
                continue
            if self._settling(decision, workload, now):
                continue
            last = self._pending_written.get(decision.workload)
            if last is not None and now - last < self._pending_refresh and _says_reason(workload, decision):
                self._pending_owed = True  # only the numbers moved, and they were written a moment ago: later
                continue
            body = wl_life.pending(workload, reason=decision.reason, message=decision.message, now=now)
            if body is not None:
                self._pending_written[decision.workload] = now
                writes.append(self._write_pending(body, _version(workload), decision, now))
        return writes

    def _settling(self, decision: PendingDecision, workload: WorkloadRecord, now: datetime.datetime) -> bool:
        """Whether this Workload's first reason still waits (it may be admitted before it is due); one that cannot
        queue at all (no position) is told at once."""
        if not self._pending_settle or decision.position is None or _quota_reserved(workload):
            return False
        key = decision.workload
        first = self._pending_since.setdefault(key, now)
        ends = first + self._pending_settle
        if now >= ends:
            return False
        self._pending_owed = True
        self._pending_due = ends if self._pending_due is None else min(self._pending_due, ends)
        return True

    async def _write_pending(
        self, body: Object, based_on: int, decision: PendingDecision, now: datetime.datetime
    ) -> None:
        """Writes ``body``, built on version ``based_on`` of the Workload (built again when the cache has another)."""
        try:
            async with self._info_gate:
                # Written in the background, a reason may come after the Workload changed: one admitted (or being
                # admitted) meanwhile is not pending any more, and a body built on an older version would only
                # conflict (and, landing first, make the admission conflict instead).
                current = self._cache.workload(*decision.workload)
                if (
                    current is None
                    or decision.workload in self.reservations
                    or self._cache.typed_workload(current).status.holds_quota
                ):
                    return
                if _version(current) != based_on:
                    fresh = wl_life.pending(current, reason=decision.reason, message=decision.message, now=now)
                    if fresh is None:
                        return
                    body = fresh
                key = decision.workload
                landing = self._reasons_landing[key] = asyncio.get_running_loop().create_future()
                try:
                    written = await self._kube.replace_status(WORKLOAD, body)
                    # Quiet: a reason changes nothing any pass would decide differently, so it starts none.
                    self._cache.observe(WORKLOAD, written, quiet=True)
                    pending = WorkloadRecord.of(written)
                    landing.set_result((_version(current), _version(pending)))
                finally:
                    if not landing.done():
                        landing.set_result(None)
                    if self._reasons_landing.get(key) is landing:
                        del self._reasons_landing[key]
        except errors.KubeError:
            return  # a reason is information; the next pass writes it again
        event = self._event(pending, type="Warning", reason="Pending", message=decision.message, now=now)
        if event is not None:
            await event
        # Users look at their Job, not its Workload: `kubectl describe job` must say why it waits too.
        owner = wl_life.controlling_owner(pending)
        if owner is not None:
            event = self._event(
                ObjectView.of(owner), type="Warning", reason="Pending", message=decision.message, now=now
            )
            if event is not None:
                await event


async def _gather(writes: list[Awaitable[None]]) -> None:
    await asyncio.gather(*writes)


def _heads_first(p: PendingDecision) -> int:
    """Write order: workloads that cannot queue, then every queue's head, then the second of each, ..."""
    return p.position or 0


def _says(workload: WorkloadRecord, decision: PendingDecision) -> bool:
    """The Workload already shows this reason and detail (a changed position alone is not worth a write)."""
    return _says_reason(workload, decision) and str(_quota_reserved(workload).get("message", "")).startswith(
        decision.detail
    )


def _says_reason(workload: WorkloadRecord, decision: PendingDecision) -> bool:
    """The Workload already shows it waits, for this reason (whatever the numbers in the message)."""
    current = _quota_reserved(workload)
    return current.get("status") == "False" and current.get("reason") == decision.reason


def _quota_reserved(workload: WorkloadRecord) -> Mapping[str, Any]:
    return conditions.find(entries(workload.status, "conditions"), COND_QUOTA_RESERVED) or {}


def _view(wl: Workload | None) -> tuple[Any, ...] | None:
    """What the scheduler reads of a Workload, but the conditions beyond finished and evicted: their messages and
    times (a pending reason, QuotaReserved's time once our admission is written) change no decision without
    fair sharing. None: not in the snapshot."""
    if wl is None:
        return None
    return (
        wl.uid,
        wl.pod_sets,
        wl.queue_name,
        wl.created,
        wl.priority,
        wl.priority_class,
        wl.active,
        wl.admission,
        wl.requeue_at,
        wl.finished,
        wl.condition_true(COND_EVICTED),
    )


def _version(workload: ObjectView) -> int:
    rv = str(workload.metadata.get("resourceVersion", ""))
    return int(rv) if rv.isdigit() else 0


def _created(workload: ObjectView) -> datetime.datetime:
    stamp = workload.metadata.get("creationTimestamp")
    return conditions.parse_time(stamp) if stamp else datetime.datetime.now(datetime.UTC)
