"""The webhook server's own timestamps for each request, for benchmarks; off unless a file is named for them.

Owns: ``RequestTimes``, the outermost middleware of the admission server when enabled. For every POST it notes the
client's port, when the request reached the middleware (its headers parsed and a handler task running), when its
answer was written to the transport, the status and the route, and writes them to a file, one line each, when the
server closes. ``bench/soak.py`` matches those lines with its client's (the k-th request of a connection on each
side) and so tells the time spent in the server from the time spent getting there and back: a client starved of
CPU and a busy server look alike from the client alone. Times are ``time.monotonic`` (CLOCK_MONOTONIC), the same
clock in every process of the machine.
Must not: be on unless asked (``turnstile run`` turns it on when ``TURNSTILE_REQUEST_TIMES`` names a file); keep
more than ``max_requests`` entries.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from aiohttp import web
from aiohttp.typedefs import Handler

from webhook.admission.routes import route_label

ENVIRONMENT: str = "TURNSTILE_REQUEST_TIMES"


class Timed(NamedTuple):
    port: int  # the client's port: with HTTP/1.1 a connection carries one request at a time
    started: float
    written: float  # the answer handed to the transport (TLS-encrypted and sent unless the socket was full)
    status: int
    route: str


class RequestTimes:
    def __init__(self, path: Path, *, max_requests: int = 1_000_000, clock: Callable[[], float] = time.monotonic):
        self.path = path
        self.max_requests = max_requests
        self._clock = clock
        self.timed: list[Timed] = []

    def middleware(self) -> Callable[[web.Request, Handler], Any]:
        @web.middleware
        async def time_it(request: web.Request, handler: Handler) -> web.StreamResponse:
            if request.method != "POST" or len(self.timed) >= self.max_requests:
                return await handler(request)
            started = self._clock()
            status = 500
            try:
                response = await handler(request)
                status = response.status
                # Written here rather than by aiohttp after this returns, so that the time it took is in the line;
                # aiohttp then finds it prepared and its end written, and does neither again. A client already gone
                # is aiohttp's to handle, as without this middleware.
                with contextlib.suppress(ConnectionError):
                    await response.prepare(request)
                    await response.write_eof()
                return response
            except web.HTTPException as exc:
                status = exc.status
                raise
            finally:
                peer = request.transport.get_extra_info("peername") if request.transport is not None else None
                port = int(peer[1]) if peer else 0
                self.timed.append(Timed(port, started, self._clock(), status, route_label(request)))

        return time_it

    def write(self) -> None:
        with self.path.open("w") as out:
            out.writelines(f"{t.port} {t.started:.6f} {t.written:.6f} {t.status} {t.route}\n" for t in self.timed)


def read(path: Path) -> list[Timed]:
    """The lines ``RequestTimes.write`` wrote."""
    found = []
    for line in path.read_text().splitlines():
        port, started, written, status, route = line.split(" ", 4)
        found.append(Timed(int(port), float(started), float(written), int(status), route))
    return found
