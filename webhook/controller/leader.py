"""Leader election through a ``coordination.k8s.io/v1`` Lease: one replica schedules and writes.

Every replica serves webhooks; only the holder of the Lease runs the scheduler and the writers. The rules follow
client-go's: a candidate takes the Lease only after it has seen the same record unchanged for a whole lease
duration (measured on its own monotonic clock, so clocks need not agree); the leader renews every retry period and
gives up leadership when it has not managed to renew within the renew deadline, which is shorter than the lease
duration, so it stops writing before anyone else may start.

The timing, made exact here (``hold``):
- A renewal counts from the moment its request was *sent*, not from when its answer came back: the API server
  stored it (and a candidate may have seen it) at some moment in between, so the start is the only end of that
  interval the leader can be sure a candidate's wait did not start before. A slow answer therefore shortens the
  leader's remaining time, never the candidate's wait.
- The leader acts only while less than ``renew_deadline`` has passed since the start of its last successful
  renewal; a candidate takes over no sooner than ``lease_duration`` after it saw that renewal, so there is at
  least ``lease_duration - renew_deadline`` (5 s by default) between the leader stopping and anyone else starting.
- A renewal is sent every retry period, *beside* any still waiting for its answer (at most ``MAX_IN_FLIGHT``): one
  request that hangs (a stuck connection, one slow etcd write) does not cost the Lease by itself, and a slow one
  that does come back still counts. client-go also retries every retry period within the renew deadline, but one
  attempt after the other, so there a single request that hangs until the deadline ends leadership.
- A renewal is one request: a JSON patch that tests the holder and sets the renew time. The API server applies it
  to the Lease as it stands, so renewals in flight together never conflict with each other, and none can overwrite
  a takeover (the test fails). A Lease held by another identity, or deleted, ends leadership at once.

``LeaseThread`` runs the elector on a thread and event loop of its own, so a renewal never waits behind the
reconciler's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.api.views import ObjectView
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import LEASE

log = logging.getLogger(__name__)


class LostLeadership(RuntimeError):
    """The Lease could not be renewed in time; the leader's work must stop at once."""


# Renewals waiting for their answer at once (one is sent every retry period).
MAX_IN_FLIGHT = 4


class Lease(ObjectView, frozen=True):
    """A Lease as the elector reads it: who holds it, and the record a holder's every write changes."""

    @property
    def holder(self) -> str:
        """``spec.holderIdentity``; "" when nobody holds it."""
        return str(self.spec.get("holderIdentity") or "")

    @property
    def record(self) -> tuple[str, object, object]:
        """Holder, renew time and transitions as written: a candidate waits for this to stay unchanged."""
        return (self.holder, self.spec.get("renewTime"), self.spec.get("leaseTransitions"))

    @property
    def transitions(self) -> int:
        return int(self.spec.get("leaseTransitions") or 0)

    def duration_or(self, default: float) -> float:
        """``spec.leaseDurationSeconds``, or ``default`` when unset (or zero)."""
        return float(self.spec.get("leaseDurationSeconds") or default)


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str
    name: str = "turnstile-leader"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("leader election needs retryPeriod < renewDeadline < leaseDuration")


def _micro_time(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquires and keeps one Lease for ``identity``."""

    def __init__(
        self,
        kube: Kube,
        config: LeaseConfig,
        *,
        identity: str,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self._kube = kube
        self._config = config
        self.identity = identity
        self._monotonic = monotonic
        self._wall = wall_clock
        # The last Lease record seen and when (monotonic) it was first seen in that form.
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        # When (monotonic) the request of the last successful write of the Lease (acquisition or renewal) was sent.
        self._last_renewal = 0.0
        self.is_leader = False
        self.renewals = 0
        self.attempts = 0

    @property
    def last_renewal(self) -> float:
        """The monotonic time at which the last successful renewal's request was sent."""
        return self._last_renewal

    async def acquire(self) -> None:
        """Returns once this replica holds the Lease."""
        while True:
            try:
                if await self.try_acquire_or_renew():
                    break
            except errors.KubeError as exc:  # the API server is not there yet or stalls: a candidate just waits
                log.warning("lease acquisition failed: %s", exc)
            await asyncio.sleep(self._config.retry_period)
        log.info("became leader", extra={"lease": self._config.name, "identity": self.identity})

    async def hold(self) -> None:
        """Renews the Lease until cancelled; raises ``LostLeadership`` once no renewal has succeeded within the
        renew deadline (counted from when the last successful one was sent), or as soon as a renewal finds the
        Lease held by another identity or gone.

        A renewal is sent every retry period whether or not the earlier ones have been answered (at most
        ``MAX_IN_FLIGHT`` wait at once): one that hangs does not hold up the next, and one that is slow but does
        come back still counts. Each is a JSON patch that tests the holder and sets the renew time, applied by the
        API server to the Lease as it stands, so renewals in flight together never conflict with each other, and
        none can overwrite a takeover (the test fails)."""
        cfg = self._config
        attempts: set[asyncio.Task[bool]] = set()
        next_attempt = self._last_renewal + cfg.retry_period
        try:
            while True:
                now = self._monotonic()
                deadline = self._last_renewal + cfg.renew_deadline
                if now >= deadline:
                    break
                if now >= next_attempt:
                    if len(attempts) < MAX_IN_FLIGHT:  # otherwise this turn is skipped: enough are waiting
                        attempts.add(asyncio.create_task(self._renewal(), name="lease-renewal"))
                    next_attempt = now + cfg.retry_period
                wake = max(min(deadline, next_attempt) - now, 0.0)
                if not attempts:
                    await asyncio.sleep(wake)
                    continue
                done, _ = await asyncio.wait(attempts, timeout=wake, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    attempts.discard(task)
                    task.result()  # LostLeadership when the Lease is someone else's
        finally:
            for task in attempts:
                task.cancel()
            await asyncio.gather(*attempts, return_exceptions=True)
        self.is_leader = False
        raise LostLeadership(f"could not renew Lease {cfg.name} within {cfg.renew_deadline}s")

    async def _renewal(self) -> bool:
        """One renewal request; True when it was stored. ``LostLeadership`` when the Lease is no longer ours."""
        cfg = self._config
        self.attempts += 1
        patch = [
            {"op": "test", "path": "/spec/holderIdentity", "value": self.identity},
            {"op": "add", "path": "/spec/renewTime", "value": _micro_time(self._wall())},
        ]
        sent = self._monotonic()
        try:
            await self._kube.patch(LEASE, cfg.name, patch, namespace=cfg.namespace, patch_type="json")
        except errors.Invalid as exc:  # the test failed: another replica took the Lease
            self.is_leader = False
            raise LostLeadership(f"Lease {cfg.name} is no longer held by {self.identity}: {exc}") from exc
        except errors.NotFound as exc:  # deleted: a candidate may create it and lead at once
            self.is_leader = False
            raise LostLeadership(f"Lease {cfg.name} was deleted") from exc
        except errors.KubeError as exc:  # not answered in time, overloaded, unavailable: the next one may be
            log.warning("lease renewal failed: %s", exc)
            return False
        self._won(sent)
        return True

    async def try_acquire_or_renew(self) -> bool:
        cfg = self._config
        now = self._wall()
        record = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(cfg.lease_duration),
            "renewTime": _micro_time(now),
        }
        try:
            lease = await self._kube.get(LEASE, cfg.name, namespace=cfg.namespace)
        except errors.NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": record | {"acquireTime": _micro_time(now), "leaseTransitions": 0},
            }
            sent = self._monotonic()
            try:
                await self._kube.create(LEASE, body)
            except (errors.AlreadyExists, errors.Conflict):
                return False
            return self._won(sent)

        held = Lease.of(lease)
        holder = held.holder
        if held.record != self._observed:
            self._observed, self._observed_at = held.record, self._monotonic()
        someone_else = bool(holder) and holder != self.identity
        if someone_else and self._monotonic() - self._observed_at < held.duration_or(cfg.lease_duration):
            self.is_leader = False
            return False
        new_spec = dict(held.spec) | record
        if holder != self.identity:
            new_spec["acquireTime"] = _micro_time(now)
            new_spec["leaseTransitions"] = held.transitions + (1 if holder else 0)
        lease["spec"] = new_spec
        sent = self._monotonic()
        try:
            await self._kube.replace(LEASE, lease)
        except (errors.Conflict, errors.NotFound):
            return False
        return self._won(sent)

    def _won(self, sent: float) -> bool:
        """A write of ours was stored; it was sent at ``sent`` (monotonic), so no candidate saw it before then."""
        self.is_leader = True
        self.renewals += 1
        self._last_renewal = max(self._last_renewal, sent)  # renewals overlap: the latest sent counts
        return True

    async def release(self) -> None:
        """Gives the Lease up at shutdown so another replica can take over at once."""
        if not self.is_leader:
            return
        self.is_leader = False
        try:
            lease = await self._kube.get(LEASE, self._config.name, namespace=self._config.namespace)
            if Lease.of(lease).holder != self.identity:
                return
            lease["spec"] = dict(lease["spec"]) | {"holderIdentity": "", "leaseDurationSeconds": 1}
            await self._kube.replace(LEASE, lease)
        except errors.KubeError as exc:
            log.warning("could not release the lease: %s", exc)


class LeaseThread:
    """Runs a ``LeaderElector`` on a thread of its own, with its own event loop and its own API client.

    Renewal is a few milliseconds every retry period, but on a shared loop it waits behind whatever holds that
    loop: a scheduling pass over 50,000 Workloads, a long list decode. On its own thread it only waits for the
    interpreter, which switches threads every few milliseconds. The owner's loop is told through ``on_leading``
    and ``on_lost`` (called on the owner's loop, via ``call_soon_threadsafe``); ``stop_now``, when given, is called
    on this thread the moment leadership is lost, before the owner hears of it (the owner's loop may be busy, and
    the leader's work must stop within the margin between the renew deadline and the lease duration); ``stop``
    releases the Lease if held and joins the thread.
    """

    def __init__(
        self,
        make_kube: Callable[[], Any],
        config: LeaseConfig,
        *,
        identity: str,
        on_leading: Callable[[], None],
        on_lost: Callable[[BaseException], None],
        stop_now: Callable[[], None] | None = None,
    ) -> None:
        self._make_kube = make_kube
        self._stop_now = stop_now
        self._config = config
        self.identity = identity
        self._on_leading = on_leading
        self._on_lost = on_lost
        self._owner: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    def start(self) -> None:
        self._owner = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._main, name="lease", daemon=True)
        self._thread.start()
        self._started.wait()

    def _main(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._started.set()
        owner = self._owner
        assert owner is not None
        try:
            async with self._make_kube() as kube:
                elector = LeaderElector(kube, self._config, identity=self.identity)
                try:
                    await elector.acquire()
                    owner.call_soon_threadsafe(self._on_leading)
                    await elector.hold()
                except asyncio.CancelledError:
                    await elector.release()
                    return
                except LostLeadership:
                    self._stopping_now()  # before the client closes: that takes a moment
                    raise
        except asyncio.CancelledError:
            return
        except BaseException as exc:  # LostLeadership, or the client could not even start
            self._stopping_now()
            owner.call_soon_threadsafe(self._on_lost, exc)

    def _stopping_now(self) -> None:
        stop_now, self._stop_now = self._stop_now, None  # once
        if stop_now is None:
            return
        try:
            stop_now()
        except Exception:  # the owner still hears of the loss
            log.exception("stopping the leader's work failed")

    async def stop(self) -> None:
        loop, task, thread = self._loop, self._task, self._thread
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                loop.call_soon_threadsafe(task.cancel)
        if thread is not None:
            await asyncio.to_thread(thread.join, 15.0)
