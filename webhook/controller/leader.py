"""Leader election through a ``coordination.k8s.io/v1`` Lease: one replica schedules and writes.

Every replica serves webhooks; only the holder of the Lease runs the scheduler and the writers. The rules are
client-go's: a candidate takes the Lease only after it has seen the same record unchanged for a whole lease
duration (measured on its own monotonic clock, so clocks need not agree); the leader renews every retry period
and gives up leadership when it has not managed to renew within the renew deadline, which is shorter than the
lease duration, so it stops writing before anyone else may start. ``LeaseThread`` runs the elector on a thread
and event loop of its own, so a renewal never waits behind the reconciler's loop.
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

from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import LEASE

log = logging.getLogger(__name__)


class LostLeadership(RuntimeError):
    """The Lease could not be renewed in time; the leader's work must stop at once."""


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
        self._last_renewal = 0.0
        self.is_leader = False

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
        """Renews the Lease until cancelled; raises ``LostLeadership`` when renewal stops working."""
        while True:
            await asyncio.sleep(self._config.retry_period)
            renewed = False
            try:
                async with asyncio.timeout(self._config.renew_deadline):  # wait_for can lose a cancellation (3.11)
                    renewed = await self.try_acquire_or_renew()
            except (errors.KubeError, TimeoutError) as exc:
                log.warning("lease renewal failed: %s", exc)
            if not renewed and self._monotonic() - self._last_renewal > self._config.renew_deadline:
                self.is_leader = False
                raise LostLeadership(f"could not renew Lease {self._config.name} for {self._config.renew_deadline}s")

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
            try:
                await self._kube.create(LEASE, body)
            except (errors.AlreadyExists, errors.Conflict):
                return False
            return self._won()

        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        seen = (holder, spec.get("renewTime"), spec.get("leaseTransitions"))
        if seen != self._observed:
            self._observed, self._observed_at = seen, self._monotonic()
        if holder and holder != self.identity:
            duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
            if self._monotonic() - self._observed_at < duration:
                self.is_leader = False
                return False
        new_spec = dict(spec) | record
        if holder != self.identity:
            new_spec["acquireTime"] = _micro_time(now)
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        lease["spec"] = new_spec
        try:
            await self._kube.replace(LEASE, lease)
        except (errors.Conflict, errors.NotFound):
            return False
        return self._won()

    def _won(self) -> bool:
        self.is_leader = True
        self._last_renewal = self._monotonic()
        return True

    async def release(self) -> None:
        """Gives the Lease up at shutdown so another replica can take over at once."""
        if not self.is_leader:
            return
        self.is_leader = False
        try:
            lease = await self._kube.get(LEASE, self._config.name, namespace=self._config.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
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
    and ``on_lost`` (called on the owner's loop, via ``call_soon_threadsafe``); ``stop`` releases the Lease if
    held and joins the thread.
    """

    def __init__(
        self,
        make_kube: Callable[[], Any],
        config: LeaseConfig,
        *,
        identity: str,
        on_leading: Callable[[], None],
        on_lost: Callable[[BaseException], None],
    ) -> None:
        self._make_kube = make_kube
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
        except asyncio.CancelledError:
            return
        except BaseException as exc:  # LostLeadership, or the client could not even start
            owner.call_soon_threadsafe(self._on_lost, exc)

    async def stop(self) -> None:
        loop, task, thread = self._loop, self._task, self._thread
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                loop.call_soon_threadsafe(task.cancel)
        if thread is not None:
            await asyncio.to_thread(thread.join, 15.0)
