"""``turnstile run``: one command, two roles, kept apart so that neither waits behind the other.

This process serves the admission webhooks from a small watch-fed cache of its own (``controller.webhookwatches``)
and hands reviews over ``routes.OFFLOAD_BYTES`` to review worker processes (``reviewpool``). The reconciler runs in
a child process (``reconcilerprocess``) with the full cache; there leader election renews the Lease on a thread and
loop of its own, and the holder of the Lease reconciles. Losing the Lease ends the child only (its replacement
starts clean and rebuilds from the API server, which is simpler and safer than trying to stop half-done writes);
this process restarts it and keeps serving meanwhile. ``turnstile serve`` is this process without the child.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import os
import signal
import sys
from pathlib import Path

from webhook.config import ConfigError, load_config
from webhook.controller.supervisor import Supervisor
from webhook.controller.webhookwatches import build_webhook_cache, start_webhook_watches
from webhook.gcpolicy import FreezeSurvivors
from webhook.kube.apiserver import ApiServerKube
from webhook.metrics import Metrics, serving
from webhook.reconcilerprocess import ReconcilerProcess
from webhook.requesttimes import ENVIRONMENT as REQUEST_TIMES_ENVIRONMENT
from webhook.requesttimes import RequestTimes
from webhook.reviewpool import ReviewPool
from webhook.runoptions import RunOptions
from webhook.schedslice import SERVING_SLICE_SECONDS, request_short_slice
from webhook.server import AdmissionServer

log = logging.getLogger(__name__)

MMAP_THRESHOLD = 128 * 1024
# The serving thread's time slice in microseconds (``webhook.schedslice``); 0 leaves the kernel's default.
SERVING_SLICE_ENVIRONMENT = "TURNSTILE_SERVING_SLICE_US"


def _split_address(address: str) -> tuple[str, int | None]:
    if not address or address == "0":
        return "", None
    host, _, port = address.rpartition(":")
    return host, int(port)


async def run(options: RunOptions, *, stop: asyncio.Event, log_level: str = "INFO", json_logs: bool = True) -> None:
    """This process serves the webhooks from a small cache of its own; with ``reconcile``, the reconciler runs in a
    child process (``webhook.reconcilerprocess``) that this one restarts whenever it ends."""
    config = options.config
    metrics = Metrics(replica_role="follower" if options.reconcile else "standalone")
    async with contextlib.AsyncExitStack() as stack:
        kube = await stack.enter_async_context(
            ApiServerKube(kubeconfig=options.kubeconfig, in_cluster=options.kubeconfig is None)
        )
        supervisor = await stack.enter_async_context(Supervisor())
        cache = build_webhook_cache()
        start_webhook_watches(kube, cache, supervisor)
        admission_options = config.admission_options()
        pool = ReviewPool(
            options=admission_options,
            view=cache,
            workers=options.review_workers,
            log_level=log_level,
            json_logs=json_logs,
        )
        stack.push_async_callback(pool.close)
        server = AdmissionServer(
            view=cache,
            options=admission_options,
            cert_file=options.cert_file,
            key_file=options.key_file,
            host=options.host,
            port=options.port,
            observe=metrics.observe_webhook,
            offload=pool.answer if options.review_workers else None,
            request_times=RequestTimes(options.request_times) if options.request_times is not None else None,
        )
        await server.start()
        stack.push_async_callback(server.close)
        if options.metrics_port is not None:
            port = await stack.enter_async_context(
                serving(metrics, host=options.metrics_host or "0.0.0.0", port=options.metrics_port)
            )
            log.info("metrics on port %d", port)
        log.info("webhook server on port %d", server.port)
        supervisor.spawn(server.run_until(stop), name="webhook-server")

        reconciler: ReconcilerProcess | None = None
        if options.reconcile:
            reconciler = ReconcilerProcess(options, metrics, log_level=log_level, json_logs=json_logs)
            stack.push_async_callback(reconciler.stop)

        async def then_the_others() -> None:
            # The worker and the reconciler start once this process serves from a synced cache: on a restart the
            # webhooks are what the API server waits for, and three interpreters importing at once on a busy
            # machine delayed them. Until then a large review waits for its worker.
            await cache.wait_synced()
            # What start-up made (modules, the synced cache) lives as long as the process: a full collection
            # need not walk it again each time (each walk holds the interpreter, so a review waits).
            gc.freeze()
            FreezeSurvivors().install()  # and so is what later full collections find alive
            if options.review_workers:
                await pool.start()
            if reconciler is not None:
                supervisor.spawn(reconciler.run(), name="reconciler-process")

        supervisor.spawn(then_the_others(), name="start-children")

        stopping = asyncio.create_task(stop.wait(), name="stop-signal")
        crashed = asyncio.create_task(supervisor.wait(), name="supervisor")
        done, _ = await asyncio.wait({stopping, crashed}, return_when=asyncio.FIRST_COMPLETED)
        for task in (stopping, crashed):
            task.cancel()
        if reconciler is not None:
            await reconciler.stop()  # releases the Lease before the webhooks stop serving
        if crashed in done:
            crashed.result()  # re-raises the crash of a supervised task


def return_large_buffers_to_the_os(threshold: int = MMAP_THRESHOLD) -> None:
    """Every allocation over ``threshold`` gets its own mapping, unmapped when freed (glibc; elsewhere a no-op).

    glibc raises its mmap threshold to the size of the largest block freed, so after the first 3 MiB body every
    later one comes from the heap, and a heap fragmented by a burst of uploads never shrinks: RSS stayed at the
    peak after aborted uploads (issue 18). A fixed threshold (which also stops that adjustment) keeps request
    bodies out of the heap. What the serving loop allocates per read stays under it (``server.TLS_READ_BYTES``).
    Inherited by the worker and reconciler processes through the environment; ``MALLOC_MMAP_THRESHOLD_`` set
    beforehand takes precedence.
    """
    with contextlib.suppress(ValueError):  # glibc's own variable, if set, wins (and is read the same way)
        threshold = int(os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(threshold)))
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, threshold)


_M_MMAP_THRESHOLD = -3


def _serving_slice() -> float:
    """The serving thread's time slice in seconds (0: the kernel's default), from ``TURNSTILE_SERVING_SLICE_US``."""
    raw = os.environ.get(SERVING_SLICE_ENVIRONMENT, "")
    try:
        return int(raw) / 1e6 if raw else SERVING_SLICE_SECONDS
    except ValueError:
        log.warning("%s=%r is not a whole number of microseconds; using the default", SERVING_SLICE_ENVIRONMENT, raw)
        return SERVING_SLICE_SECONDS


def run_from_cli(
    *,
    config_file: Path | None,
    cert_file: Path | None,
    key_file: Path | None,
    kubeconfig: Path | None,
    host: str | None,
    port: int | None,
    metrics_address: str | None,
    reconcile: bool,
    visibility_address: str | None = None,
    json_logs: bool,
) -> int:
    """``turnstile run`` / ``turnstile serve``: configuration, then serve until SIGINT/SIGTERM."""
    from webhook import logs

    return_large_buffers_to_the_os()
    level = os.environ.get("TURNSTILE_LOG_LEVEL", "INFO")
    logs.configure(level, json=json_logs)
    try:
        config = load_config(config_file)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    cert_dir = Path(config.webhook.cert_dir)
    cert = cert_file or cert_dir / "tls.crt"
    key = key_file or cert_dir / "tls.key"
    for path in (cert, key):
        if not path.exists():
            print(
                f"turnstile: {path} does not exist (run `turnstile certs` or pass --tls-cert/--tls-key)",
                file=sys.stderr,
            )
            return 2
    metrics_host, metrics_port = _split_address(metrics_address or config.metrics.bind_address)
    visibility_host, visibility_port = _split_address(visibility_address or "")
    options = RunOptions(
        config=config,
        cert_file=cert,
        key_file=key,
        kubeconfig=kubeconfig or (Path(os.environ["KUBECONFIG"]) if os.environ.get("KUBECONFIG") else None),
        host=config.webhook.host if host is None else host,
        port=config.webhook.port if port is None else port,
        metrics_host=metrics_host,
        metrics_port=metrics_port,
        reconcile=reconcile,
        visibility_host=visibility_host,
        visibility_port=visibility_port,
        request_times=Path(times) if (times := os.environ.get(REQUEST_TIMES_ENVIRONMENT)) else None,
    )

    serving_slice = _serving_slice()
    if serving_slice and request_short_slice(serving_slice):
        log.info("the serving thread runs with a %.1f ms time slice", serving_slice * 1000)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run(options, stop=stop, log_level=level, json_logs=json_logs)

    try:
        asyncio.run(main())
    except Exception as exc:  # the process's last word: one line, then a non-zero exit
        log.critical("turnstile stopped: %s", exc, exc_info=True)
        return 1
    return 0
