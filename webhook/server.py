"""``turnstile serve``: the webhook's HTTPS server lifecycle (aiohttp ``AppRunner`` + ``TCPSite`` with TLS).

The caller supplies the ``ClusterView`` the policies read (the watch-fed cache in production, a static view in
tests and local runs). The certificate reloader runs as a named background task started and stopped by the
app's ``cleanup_ctx``; if it dies, ``run_until`` raises so the process stops loudly instead of serving a
certificate that will expire. Connections are capped and given deadlines (``webhook.connections``); a request
answered without its body being read is followed by closing the connection, never by draining the body
(``LINGERING_SECONDS``); reviews larger than ``routes.OFFLOAD_BYTES`` go to ``offload`` when one is given (the
review worker processes). The bytes of every request body read are counted once the request is done, and the heap
they leave free is given back to the OS now and then (``webhook.memtrim``). With ``request_times`` the server notes
when it took and answered each request (``webhook.requesttimes``, for benchmarks).
Must not: hold admission policy.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

from aiohttp import web
from aiohttp.typedefs import Handler

from webhook.admission.options import AdmissionOptions
from webhook.admission.routes import Observer, Offload, Readiness, build_app
from webhook.admission.view import ClusterView
from webhook.connections import ConnectionGuard, ConnectionLimits, GuardedSite
from webhook.memtrim import MemoryTrimmer
from webhook.requesttimes import RequestTimes
from webhook.tls import DEFAULT_POLL_SECONDS, CertificateReloader

log = logging.getLogger(__name__)

RELOADER: Final = web.AppKey("tls_reloader", CertificateReloader)
FAILURES: Final = web.AppKey[asyncio.Queue[BaseException]]("task_failures")
POLL_SECONDS: Final = web.AppKey("tls_poll_seconds", float)
SHUTDOWN_GRACE_SECONDS = 5.0
# After answering a request whose body it did not read (an unknown path, a body announced over the limit), aiohttp
# by default reads and throws away up to 10 s of that body to keep the connection: TLS decryption, on the serving
# loop, of a body nobody wants. With 0 it closes the connection instead; the API server's requests are always read.
LINGERING_SECONDS = 0.0
# asyncio's TLS transport reads into a per-connection buffer of SSLProtocol.max_size (256 KiB) and asks the SSL
# object for as much on every read: a fresh 256 KiB bytes object each time, shrunk to what came. That is over
# glibc's mmap threshold (128 KiB, which ``runner.return_large_buffers_to_the_os`` fixes), so every read of every
# review was an mmap, an mremap and an munmap (with its TLB shootdown across the cores) on the serving thread
# (strace of 600-byte reads; the same with glibc's own settings). Raising the threshold instead left those buffers
# in the heap and fragmented it: the webhook process stayed at 200 MB after the soak instead of 112. A TLS record
# holds at most 16 KiB, so reading 64 KiB at a time costs one more read per 64 KiB of a large body, and each
# connection's buffer is a quarter of the size. Set for this whole process.
TLS_READ_BYTES = 64 * 1024


async def _certificate_watch(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.create_task(app[RELOADER].watch(app[POLL_SECONDS]), name="tls-reload")

    def supervise(done: asyncio.Task[None]) -> None:
        if not done.cancelled() and (exc := done.exception()) is not None:
            log.error("background task %s crashed", done.get_name(), exc_info=exc)
            app[FAILURES].put_nowait(exc)

    task.add_done_callback(supervise)
    yield
    if task.done():
        return  # a crash was already reported through FAILURES
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _counting_bodies(trimmer: MemoryTrimmer) -> Callable[[web.Request, Handler], Any]:
    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        finally:  # after the handler let go of the body; aborted and refused uploads count too
            trimmer.bodies_read(request.content.total_bytes)

    return count


class AdmissionServer:
    """One HTTPS listener serving the admission routes; ``start``, then ``run_until``, then ``close``."""

    def __init__(
        self,
        *,
        view: ClusterView,
        options: AdmissionOptions,
        cert_file: Path,
        key_file: Path,
        host: str = "",
        port: int = 9443,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        observe: Observer | None = None,
        offload: Offload | None = None,
        limits: ConnectionLimits | None = None,
        trimmer: MemoryTrimmer | None = None,
        request_times: RequestTimes | None = None,
    ) -> None:
        asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BYTES
        self.readiness = Readiness()
        self.reloader = CertificateReloader(cert_file, key_file)
        self.guard = ConnectionGuard(limits or ConnectionLimits())
        self.app = build_app(view=view, options=options, readiness=self.readiness, observe=observe, offload=offload)
        self.trimmer = trimmer or MemoryTrimmer()
        self.app.middlewares.insert(0, _counting_bodies(self.trimmer))  # type: ignore[arg-type]
        self.app.middlewares.insert(0, self.guard.middleware())  # type: ignore[arg-type]
        self.request_times = request_times
        if request_times is not None:  # outermost: its times include every other middleware's
            self.app.middlewares.insert(0, request_times.middleware())  # type: ignore[arg-type]
        self.app[RELOADER] = self.reloader
        self.app[FAILURES] = asyncio.Queue()
        self.app[POLL_SECONDS] = poll_seconds
        self.app.cleanup_ctx.append(_certificate_watch)
        self._host = host or None
        self._port = port
        self._runner = web.AppRunner(
            self.app,
            access_log=None,
            shutdown_timeout=SHUTDOWN_GRACE_SECONDS,
            keepalive_timeout=self.guard.limits.idle_seconds,
            lingering_time=LINGERING_SECONDS,
        )
        self._sweeping: contextlib.AbstractAsyncContextManager[None] | None = None

    async def start(self) -> None:
        await self._runner.setup()
        site = GuardedSite(self._runner, self._host, self._port, ssl_context=self.reloader.context, guard=self.guard)
        await site.start()
        self._sweeping = self.guard.sweeping()
        await self._sweeping.__aenter__()
        self.readiness.tls_serving = True
        log.info("serving admission webhooks on %s", self._runner.addresses)

    @property
    def port(self) -> int:
        """The bound port (useful when started with port 0)."""
        address = self._runner.addresses[0]
        return int(address[1])

    async def run_until(self, stop: asyncio.Event) -> None:
        """Serves until ``stop`` is set; raises the error of a crashed background task."""
        stopping = asyncio.create_task(stop.wait(), name="serve-stop")
        failing = asyncio.create_task(self.app[FAILURES].get(), name="serve-failure")
        done, pending = await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if failing in done:
            raise RuntimeError("a background task of the webhook server crashed") from failing.result()

    async def close(self) -> None:
        self.readiness.tls_serving = False
        if self._sweeping is not None:
            await self._sweeping.__aexit__(None, None, None)
            self._sweeping = None
        await self._runner.cleanup()
        await self.trimmer.close()
        if self.request_times is not None:
            self.request_times.write()


async def serve(
    *,
    view: ClusterView,
    options: AdmissionOptions,
    cert_file: Path,
    key_file: Path,
    host: str = "",
    port: int = 9443,
    stop: asyncio.Event | None = None,
) -> None:
    """Runs the webhook server until ``stop`` is set (forever when None)."""
    server = AdmissionServer(view=view, options=options, cert_file=cert_file, key_file=key_file, host=host, port=port)
    await server.start()
    try:
        await server.run_until(stop if stop is not None else asyncio.Event())
    finally:
        await server.close()
