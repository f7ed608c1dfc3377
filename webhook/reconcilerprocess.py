"""The reconciler part of ``turnstile run`` in a process of its own, restarted by the webhook process when it ends.

Owns: ``ReconcilerProcess`` (the parent side: start, leader election, relay, restart with backoff, stop) and
``child_main`` (the child: the full watch-fed cache, and the reconciler once the parent says it leads).

Why a process: the scheduler, the writers and their cache are CPU-heavy Python (a pass over 50,000 pending
Workloads, a 100 MB list decode on a re-list); on the webhook's interpreter every one of those milliseconds is a
millisecond no review is answered. In a process of its own the kernel shares the cores between the two, and a
stall, a crash or a lost Lease ends the reconciler only: the webhooks keep serving while a fresh reconciler (new
identity, new cache, nothing half-done carried over) starts and campaigns again.

Why the Lease is renewed here, in the parent, on a thread of its own (``LeaseThread``), and not in the child: the
child runs niced (its work is throughput, the webhooks' is latency), and a thread of a niced process that holds the
interpreter lock while the kernel has it waiting for a core makes every other thread of that process wait too; a
renewal thread there missed 24 renewals in the issue-18 soak (a 9.4 s gap, on a 10 s renew deadline). In this
process the lock's holder is the serving loop at normal priority, whose steps are short. The child reconciles only
after the parent tells it that it leads; when no renewal has succeeded within the renew deadline (``leader``: attempts
are retried within it), the Lease thread itself SIGKILLs the child at once, without waiting for the serving loop
(another replica may take the Lease only a lease duration after the last renewal, later still), and the Lease is
given up only after the child has ended.

The child never outlives the parent: the kernel kills it when the parent dies (``PR_SET_PDEATHSIG``), and it stops
when the pipe to the parent closes. Through the pipe it sends its metric families (rendered, see
``Metrics.families``) when the parent asks, once per scrape of the parent's ``/metrics``, which shows them beside
its own. Must not: serve webhooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Final

from webhook import childprocess
from webhook.controller.leader import LeaseConfig, LeaseThread
from webhook.gcpolicy import FreezeSurvivors
from webhook.kube.apiserver import ApiServerKube
from webhook.metrics import Metrics

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from webhook.runoptions import RunOptions

log = logging.getLogger(__name__)

EXIT_LOST_LEASE: Final = 3
# The reconciler is throughput work and the webhooks latency work: its threads run at nice 10 (and SCHED_BATCH),
# so when the cores are short the kernel runs the webhook process first. Measured on the saturated 2-core machine:
# with the reconciler not niced it took 21 CPU-seconds to the webhook process's 11, and valid reviews waited 10 s.
RECONCILER_NICENESS: Final = 10


class ReconcilerProcess:
    """Parent side. ``run`` keeps one child running until cancelled; ``stop`` ends it gracefully."""

    def __init__(
        self,
        options: RunOptions,
        metrics: Metrics,
        *,
        log_level: str = "INFO",
        json_logs: bool = True,
        backoff: tuple[float, float] = (1.0, 30.0),
    ) -> None:
        self._options = options
        self._metrics = metrics
        self._log_level = log_level
        self._json_logs = json_logs
        self._backoff = backoff
        self._process: childprocess.Child | None = None
        self._conn: Connection | None = None
        self._elector: LeaseThread | None = None
        self._lost = False
        self.restarts = 0
        self.role = "follower"
        self._stopping = False
        self._asked: asyncio.Future[None] | None = None  # a request for the child's families, not yet answered
        metrics.relay_from(self._ask_metrics)

    @property
    def child(self) -> childprocess.Child | None:
        """The current child process, None before the first start."""
        return self._process

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def run(self) -> None:
        delay = self._backoff[0]
        while True:
            started = time.monotonic()
            code = await self._run_once()
            self._became("follower")
            self._metrics.relay({})
            if self._stopping:
                return
            if time.monotonic() - started > 60:
                delay = self._backoff[0]  # it ran well for a while: this is a new problem, restart at once
            why = "lost the Lease" if code == EXIT_LOST_LEASE else f"exited with {code}"
            log.warning("the reconciler process %s; starting a new one in %.0fs", why, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._backoff[1])
            self.restarts += 1

    async def _run_once(self) -> int | None:
        loop = asyncio.get_running_loop()
        identity = f"{self._options.identity or socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        # Started from the loop's (main) thread: PR_SET_PDEATHSIG fires when the *thread* that forked exits.
        process, parent_conn = childprocess.start(
            child_main,
            self._options,
            os.getpid(),
            self._log_level,
            self._json_logs,
            identity,
            name="turnstile-reconciler",
        )
        self._process, self._conn, self._lost = process, parent_conn, False
        log.info("reconciler process started", extra={"pid": process.pid, "identity": identity})
        reader = threading.Thread(target=self._read, args=(parent_conn, loop), name="reconciler-relay", daemon=True)
        reader.start()
        self._elector = self._campaign(identity)
        try:
            await asyncio.to_thread(process.join)  # when cancelled (shutdown), ``stop`` ends the child
        finally:
            await self._release()
        parent_conn.close()
        code: int | None = EXIT_LOST_LEASE if self._lost else process.exitcode
        return code

    def _campaign(self, identity: str) -> LeaseThread | None:
        """Runs leader election for the child, here: see the module docstring. Without it, the child leads."""
        lease = self._options.config.leader_election
        if not lease.leader_elect:
            self._lead()
            return None
        options = self._options

        def make_kube() -> ApiServerKube:
            return ApiServerKube(kubeconfig=options.kubeconfig, in_cluster=options.kubeconfig is None)

        elector = LeaseThread(
            make_kube,
            LeaseConfig(
                namespace=options.config.namespace,
                name=lease.resource_name,
                lease_duration=lease.lease_duration_seconds,
                renew_deadline=lease.renew_deadline_seconds,
                retry_period=lease.retry_period_seconds,
            ),
            identity=identity,
            on_leading=self._lead,
            on_lost=self._lose,
            stop_now=self._kill_child,
        )
        elector.start()
        return elector

    def _lead(self) -> None:
        self._send(("lead", None))
        self._became("leader")

    def _kill_child(self) -> None:
        """On the Lease thread, the moment the renew deadline passes: the child must stop writing before another
        replica may take the Lease (a lease duration after the last renewal), even if this process's loop is busy.
        SIGKILL, not a request."""
        self._lost = True
        process = self._process
        if process is not None and process.is_alive():
            process.kill()

    def _lose(self, exc: BaseException) -> None:
        """The Lease was lost (the child is already killed, ``_kill_child``): recorded on the loop."""
        log.error("lost the Lease (%s); ended the reconciler process", exc)
        self._kill_child()
        self._became("follower")

    async def _release(self) -> None:
        """Ends the election (giving the Lease up if held): only once the child no longer writes."""
        elector, self._elector = self._elector, None
        if elector is not None:
            await elector.stop()

    def _send(self, message: tuple[str, Any]) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError, ValueError):
                self._conn.send(message)

    def _read(self, conn: Connection, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(self._message, message)

    def _message(self, message: tuple[str, Any]) -> None:
        kind, value = message
        if kind == "role":
            self._became(value)
        elif kind == "metrics":
            self._metrics.relay(value)
            asked, self._asked = self._asked, None
            if asked is not None and not asked.done():
                asked.set_result(None)

    async def _ask_metrics(self) -> None:
        """Asks the child for its families and waits for them (concurrent scrapes share one request)."""
        if self._conn is None or self._process is None or not self._process.is_alive():
            return
        if self._asked is None or self._asked.done():
            self._asked = asyncio.get_running_loop().create_future()
            self._send(("metrics", None))
        await asyncio.shield(self._asked)

    def _became(self, role: str) -> None:
        self.role = role
        self._metrics.set_replica_role("leader" if role == "leader" else "follower")

    async def stop(self, grace: float = 15.0) -> None:
        """Asks the child to stop and exit (killing it if it does not within ``grace`` seconds), then gives the Lease
        up, so another replica can take over at once."""
        self._stopping = True
        process = self._process
        if process is not None and process.is_alive():
            self._send(("stop", None))
            await asyncio.to_thread(process.join, grace)
            if process.is_alive():
                log.warning("the reconciler process did not stop in %.0fs; killing it", grace)
                process.kill()
                await asyncio.to_thread(process.join, 5.0)
        await self._release()


# -- the child ----------------------------------------------------------------------------------------------


def child_main(
    conn: Connection, options: RunOptions, parent: int, log_level: str, json_logs: bool, identity: str
) -> None:
    childprocess.die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C goes to the parent, which stops us
    from webhook import logs

    logs.configure(log_level, json=json_logs)
    try:
        run_loop(_child(options, conn, identity))
    except Exception as exc:
        log.critical("reconciler stopped: %s", exc, exc_info=True)
        sys.exit(1)


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run the reconciler's ``main`` to its end on uvloop's event loop (see pyproject.toml). Imported here: the
    webhook process, which imports this module to start the child, runs asyncio's loop."""
    import uvloop

    uvloop.run(main)


async def _child(options: RunOptions, conn: Connection, identity: str) -> None:
    from webhook.controller.events import EventRecorder
    from webhook.controller.reconciler import Reconciler
    from webhook.controller.supervisor import Supervisor
    from webhook.controller.watches import build_cache, start_watches, watch_specs

    loop = asyncio.get_running_loop()
    config = options.config
    metrics = Metrics(replica_role="follower")
    stop = asyncio.Event()
    lead = asyncio.Event()

    def send(message: tuple[str, Any]) -> None:
        with contextlib.suppress(OSError, ValueError):
            conn.send(message)

    def relay() -> None:
        send(("metrics", metrics.families()))

    def listen() -> None:  # the parent says lead or stop, asks for our metrics, or goes away
        with contextlib.suppress(EOFError, OSError):
            while True:
                kind = conn.recv()[0]
                if kind == "stop":
                    break
                if kind in ("lead", "metrics"):
                    with contextlib.suppress(RuntimeError):  # rendered on the loop, which owns the registry
                        loop.call_soon_threadsafe(lead.set if kind == "lead" else relay)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=listen, name="parent-pipe", daemon=True).start()
    # A SIGTERM sent to the whole process group (a terminal, a container runtime) is the parent's to handle: here
    # it only means "stop cleanly".
    loop.add_signal_handler(signal.SIGTERM, stop.set)

    async with (
        ApiServerKube(kubeconfig=options.kubeconfig, in_cluster=options.kubeconfig is None) as kube,
        Supervisor() as supervisor,
        contextlib.AsyncExitStack() as stack,
    ):
        specs = watch_specs(config.frameworks)  # only the enabled job kinds are watched
        cache = build_cache(specs)
        start_watches(kube, cache, supervisor, specs=specs)
        if options.visibility_port is not None:
            # Served by every replica from this process's cache: the pending lists and positions need all
            # Workloads and queues, which the webhook process does not hold.
            from webhook.visibility.listener import start_visibility

            await start_visibility(
                stack,
                supervisor,
                kube=kube,
                cache=cache,
                cert_file=options.cert_file,
                key_file=options.key_file,
                host=options.visibility_host,
                port=options.visibility_port,
            )
        # Imported and started at full speed (a replacement child should be ready soon); from here on, this thread
        # and every thread it starts are background work. The Lease is renewed in the parent, so nothing here
        # has a deadline that niceness could make it miss.
        childprocess.background_priority(RECONCILER_NICENESS)
        reconciler = Reconciler(
            kube,
            cache,
            namespaces=config.namespace_policy(),
            metrics=metrics,
            events=EventRecorder(kube, host=identity),
            wait_for_pods_ready=config.wait_for_pods_ready,
            manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
            frameworks=config.frameworks,
            fair_sharing=config.fair_sharing,
            admission_fair_sharing=config.admission_fair_sharing,
        )

        async def leading() -> None:
            await lead.wait()
            metrics.set_replica_role("leader")
            supervisor.spawn(reconciler.run(), name="reconciler")

        async def frozen() -> None:
            # The first sync decodes every object (50,000 Workloads: some 850,000 tracked dicts and lists); a full
            # collection then walks them all, 3.8-5.8 s on the loaded 2-core test machine, holding the interpreter.
            # Frozen, they are skipped (still freed by reference counting when replaced; decoded JSON makes no
            # cycles).
            await cache.wait_synced()
            gc.freeze()
            # From then on, what each full collection finds alive is frozen too (the cache's later versions,
            # the scheduler's kept snapshot): without it, 40-50 full collections walked everything again and
            # took 7-11 s of a scale-0.5 baseline run; with it about 2 s.
            FreezeSurvivors().install()

        supervisor.spawn(leading(), name="wait-for-lead")
        supervisor.spawn(frozen(), name="gc-freeze")
        waits: dict[str, asyncio.Future[Any]] = {
            "stop": asyncio.ensure_future(stop.wait()),
            "crash": asyncio.ensure_future(supervisor.wait()),
        }
        try:
            await asyncio.wait(waits.values(), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in waits.values():
                future.cancel()
            await supervisor.close()  # the reconciler stops writing before the parent gives the Lease up
        crash = waits["crash"]
        if crash.done() and not crash.cancelled() and crash.exception() is not None:
            raise crash.exception()  # type: ignore[misc]
