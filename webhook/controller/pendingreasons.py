"""Why a Workload waits, written on it: its ``QuotaReserved: False`` condition and a ``Pending`` event.

Reasons are written when they change (not when only the queue position moves), heads first, a bounded number per
pass so a deep queue cannot stall the loop, and only for the first ``positions`` waiting in each ClusterQueue (and
every Workload that cannot queue at all): as in Kueue, whose reasons are those of the heads it tried. What waits
further back is listed, with its position and reason, by the visibility API and ``turnstile workloads --pending``.
When only the numbers in the message moved (free and used quota change with every admission), a Workload is
rewritten at most once per ``refresh``: with hundreds waiting, rewriting every one on every pass (a status write
and two events each) made the API writes for information outweigh the writes that admit. A Workload's first reason
waits until it has been in the front for ``settle`` (one admitted sooner never gets one). All of them together are
written at most at the ``limit``'s rate: under a storm the heads are told first, and the writes that admit keep the
API server.
"""

from __future__ import annotations

import asyncio
import datetime
import re
from collections.abc import Awaitable, Callable, Container, Mapping
from typing import Any

from webhook.api import conditions
from webhook.api.constants import COND_QUOTA_RESERVED
from webhook.api.views import ObjectView, WorkloadRecord, entries
from webhook.controller.cache import ClusterCache
from webhook.controller.ratelimit import TokenBucket
from webhook.controller.reservations import Reservations
from webhook.controller.snapshotter import version
from webhook.core.decisions import PendingDecision
from webhook.jobs import workload as wl_life
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object
from webhook.kube.resources import WORKLOAD

Key = tuple[str, str]
Event = Callable[..., Awaitable[None] | None]  # records an event: awaited, or None when recorded in the background


class PendingReasons:
    def __init__(
        self,
        kube: Kube,
        cache: ClusterCache,
        reservations: Reservations,
        *,
        event: Event,
        gate: asyncio.Semaphore,
        budget: int,
        positions: int,
        refresh: datetime.timedelta,
        settle: datetime.timedelta,
        deferred: bool = False,
        limit: TokenBucket | None = None,
    ) -> None:
        """``deferred``: written in the background (a pass, and the next admission, never wait for them); a
        decision whose reasons come while the previous ones are still being written leaves them owed. ``limit``:
        the rate of reason writes (heads first; the rest owed until a token comes)."""
        self._limit = limit
        self._deferred = deferred
        self._kube = kube
        self._cache = cache
        self._reservations = reservations
        self._event = event
        self._gate = gate
        self._budget = budget
        self.positions = positions  # the front of each queue that is explained (the scheduler explains no further)
        self._refresh = refresh
        self._settle = settle
        self._written: dict[Key, datetime.datetime] = {}  # when this process last wrote a reason
        # Reasons being written now, each settling to (the version it was built on, the version written), or None
        # if not written: an admission decided meanwhile waits for it and builds on what it wrote, instead of
        # conflicting with our own write (a failed write, a read and another pass).
        self._landing: dict[Key, asyncio.Future[tuple[int, int] | None]] = {}
        # In a queue that moves, most Workloads pass through the front in a second or two, and a reason written
        # for each (a status write and its events) was a third of the API requests per admission while draining
        # a backlog: hence the settle.
        self._since: dict[Key, datetime.datetime] = {}  # first seen in the front with no reason yet
        self._due: datetime.datetime | None = None  # the earliest end of a settle
        self._task: asyncio.Task[None] | None = None
        self.owed = False  # some reasons of the last decision are still to be written

    @property
    def writing(self) -> bool:
        """Whether reasons started in the background are still being written."""
        return self._task is not None and not self._task.done()

    def due(self) -> datetime.datetime | None:
        """When a settle ends (owed reasons wait for the writes in flight)."""
        return None if self.writing else self._due

    def ready(self, now: datetime.datetime) -> bool:
        """Whether a reason decided now could be written now: none being written in the background (deferred) and
        a token in the limit. A pass that finds them not ready need not explain its pending Workloads at all."""
        if self._deferred and self.writing:
            return False
        return self._limit is None or self._limit.next_at(now.timestamp()) <= now.timestamp()

    def unexplained(self, now: datetime.datetime) -> None:
        """A pass decided without explaining (not ``ready``): reasons are owed from the limit's next token on (or
        once the writes in flight are done)."""
        if self._limit is not None:
            self._owe_next_token(now)
        else:
            self.owed = True

    def landing(self, key: Key) -> asyncio.Future[tuple[int, int] | None] | None:
        """The reason being written for ``key`` now, if any: (the version it was built on, the version written)."""
        return self._landing.get(key)

    def decided(
        self, pending: tuple[PendingDecision, ...], now: datetime.datetime, backlog: Container[Key]
    ) -> list[Awaitable[None]]:
        """A pass decided: the writes of its reasons, for the pass to await with its admissions (none when deferred:
        started in the background, or owed while the previous ones are being written)."""
        if not self._deferred:
            return self.writes(pending, now, backlog)
        if self.writing:
            self.owed = True
        else:
            self._start(pending, now, backlog)
        return []

    async def catch_up(
        self, pending: tuple[PendingDecision, ...], now: datetime.datetime, backlog: Container[Key]
    ) -> None:
        """A pass that decided nothing new: the reasons of the last decision still owed (a budget reached, a
        refresh or a settle not over), written now, or started if deferred and nothing is being written."""
        if not self.owed:
            return
        if not self._deferred:
            self.owed = False
            await _gather(self.writes(pending, now, backlog))
        elif not self.writing:
            self._start(pending, now, backlog)

    def _start(self, pending: tuple[PendingDecision, ...], now: datetime.datetime, backlog: Container[Key]) -> None:
        self.owed = False
        writes = self.writes(pending, now, backlog)
        if writes:
            self._task = asyncio.get_running_loop().create_task(_gather(writes), name="pending-reasons")

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def drain(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def writes(
        self, pending: tuple[PendingDecision, ...], now: datetime.datetime, backlog: Container[Key]
    ) -> list[Awaitable[None]]:
        """The writes of this decision's reasons that are due; ``backlog``: the Workloads still pending anywhere."""
        writes: list[Awaitable[None]] = []
        # Forgotten once no longer pending (not merely out of the front: one back in it within the refresh keeps its
        # limit, as when every position was explained).
        waiting = {p.workload for p in pending}
        self._written = {k: t for k, t in self._written.items() if k in waiting or k in backlog}
        in_front = [p for p in pending if p.position is None or p.position <= self.positions]
        since = self._since
        self._since = {k: t for k in (p.workload for p in in_front) if (t := since.get(k)) is not None}
        self._due = None
        for decision in sorted(in_front, key=_heads_first):
            if len(writes) >= self._budget:
                self.owed = True  # the rest in a later pass, from this decision if nothing changes
                break
            workload = self._cache.workload(*decision.workload)
            if workload is None or _says(workload, decision):
                continue
            if self._settling(decision, workload, now):
                continue
            last = self._written.get(decision.workload)
            if last is not None and now - last < self._refresh and _says_reason(workload, decision):
                self.owed = True  # only the numbers moved, and they were written a moment ago: later
                continue
            body = wl_life.pending(workload, reason=decision.reason, message=decision.message, now=now)
            if body is not None:
                if self._limit is not None and not self._limit.take(now.timestamp()):
                    self._owe_next_token(now)
                    break
                self._written[decision.workload] = now
                writes.append(self._write(body, version(workload), decision, now))
        return writes

    def _settling(self, decision: PendingDecision, workload: WorkloadRecord, now: datetime.datetime) -> bool:
        """Whether this Workload's first reason still waits (it may be admitted before it is due); one that cannot
        queue at all (no position) is told at once."""
        if not self._settle or decision.position is None or _quota_reserved(workload):
            return False
        first = self._since.setdefault(decision.workload, now)
        ends = first + self._settle
        if now >= ends:
            return False
        self._owe_until(ends)
        return True

    def _owe_next_token(self, now: datetime.datetime) -> None:
        """Reasons are owed from the limit's next token on."""
        assert self._limit is not None
        self._owe_until(datetime.datetime.fromtimestamp(self._limit.next_at(now.timestamp()), now.tzinfo))

    def _owe_until(self, ends: datetime.datetime) -> None:
        """A reason is owed, and can be written from ``ends`` on."""
        self.owed = True
        self._due = ends if self._due is None else min(self._due, ends)

    async def _write(self, body: Object, based_on: int, decision: PendingDecision, now: datetime.datetime) -> None:
        """Writes ``body``, built on version ``based_on`` of the Workload (built again when the cache has another)."""
        try:
            async with self._gate:
                # Written in the background, a reason may come after the Workload changed: one admitted (or being
                # admitted) meanwhile is not pending any more, and a body built on an older version would only
                # conflict (and, landing first, make the admission conflict instead).
                current = self._cache.workload(*decision.workload)
                if (
                    current is None
                    or decision.workload in self._reservations
                    or self._cache.typed_workload(current).status.holds_quota
                ):
                    return
                if version(current) != based_on:
                    fresh = wl_life.pending(current, reason=decision.reason, message=decision.message, now=now)
                    if fresh is None:
                        return
                    body = fresh
                key = decision.workload
                landing = self._landing[key] = asyncio.get_running_loop().create_future()
                try:
                    written = await self._kube.replace_status(WORKLOAD, body)
                    # Quiet: a reason changes nothing any pass would decide differently, so it starts none.
                    self._cache.observe(WORKLOAD, written, quiet=True)
                    pending = WorkloadRecord.of(written)
                    landing.set_result((version(current), version(pending)))
                finally:
                    if not landing.done():
                        landing.set_result(None)
                    if self._landing.get(key) is landing:
                        del self._landing[key]
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


# Numbers in a reason's message (quota free and used, positions): masked when asking whether only they moved.
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def _says(workload: WorkloadRecord, decision: PendingDecision) -> bool:
    """The Workload already shows this reason and detail (a changed position alone is not worth a write)."""
    return _says_reason(workload, decision) and str(_quota_reserved(workload).get("message", "")).startswith(
        decision.detail
    )


def _says_reason(workload: WorkloadRecord, decision: PendingDecision) -> bool:
    """The Workload already shows it waits for this reason, in these words but for the numbers (quota free and
    used, positions): a message that says something else (a StrictFIFO blocker gone, another resource short) is
    worth a write at once."""
    current = _quota_reserved(workload)
    if current.get("status") != "False" or current.get("reason") != decision.reason:
        return False
    return _NUMBERS.sub("#", str(current.get("message", ""))).startswith(_NUMBERS.sub("#", decision.detail))


def _quota_reserved(workload: WorkloadRecord) -> Mapping[str, Any]:
    return conditions.find(entries(workload.status, "conditions"), COND_QUOTA_RESERVED) or {}
