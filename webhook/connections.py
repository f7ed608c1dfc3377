"""Bounded connections for the webhook server: a cap per process and deadlines for every phase of a connection.

Owns: ``ConnectionLimits`` and ``ConnectionGuard``. aiohttp has a keep-alive timeout but no deadline for the TLS
handshake, for the request headers, or for a whole request, so one slow client per connection could hold a socket,
a TLS context (50-100 KiB each) and a parser forever. The guard wraps aiohttp's protocol factory, refuses
connections beyond the cap, and sweeps the open ones once a second:
- no request started within ``header_seconds`` of accepting (slow headers, or nothing at all) → closed;
- idle after a response for ``idle_seconds`` → closed (the API server reconnects; Go's client expects this);
- one request running longer than ``request_seconds`` (the body deadline is the route's own) → closed.
The TLS handshake's deadline is asyncio's ``ssl_handshake_timeout``. Must not: know what the requests are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 1000
    handshake_seconds: float = 10.0
    header_seconds: float = 10.0
    idle_seconds: float = 30.0
    request_seconds: float = 30.0
    sweep_seconds: float = 1.0


class _Refused(asyncio.Protocol):
    """The protocol of a connection beyond the cap: closed as soon as it is made."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()  # type: ignore[attr-defined]


@dataclass
class _State:
    accepted: float
    active: int = 0  # requests being handled on this connection
    request_started: float = 0.0
    last_done: float | None = None
    connected: bool = False


@dataclass
class ConnectionGuard:
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    clock: Callable[[], float] = time.monotonic
    refused: int = 0
    closed: int = 0

    def __post_init__(self) -> None:
        # aiohttp's protocol has __slots__ and no weak references: the sweep forgets closed connections.
        self._open: dict[Any, _State] = {}

    def factory(self, inner: Callable[[], asyncio.BaseProtocol]) -> Callable[[], asyncio.BaseProtocol]:
        """Wraps aiohttp's ``web.Server`` (the per-connection protocol factory)."""

        def make() -> asyncio.BaseProtocol:
            if len(self._open) >= self.limits.max_connections:
                self.refused += 1
                return _Refused()
            protocol = inner()
            self._open[protocol] = _State(accepted=self.clock())
            return protocol

        return make

    def middleware(self) -> Callable[[web.Request, Handler], Any]:
        @web.middleware
        async def track(request: web.Request, handler: Handler) -> web.StreamResponse:
            state = self._open.get(request.protocol)
            if state is None:
                return await handler(request)
            state.active += 1
            state.request_started = self.clock()
            try:
                return await handler(request)
            finally:
                state.active -= 1
                state.last_done = self.clock()

        return track

    def sweep(self) -> None:
        """Closes every connection past one of its deadlines; forgets those already closed."""
        now = self.clock()
        limits = self.limits
        for protocol, state in list(self._open.items()):
            transport = getattr(protocol, "transport", None)
            if transport is None:
                if state.connected:  # closed since the last sweep
                    del self._open[protocol]
                elif now - state.accepted > limits.handshake_seconds + limits.header_seconds:
                    del self._open[protocol]  # the handshake never finished (asyncio aborts it)
                continue
            state.connected = True
            if state.active:
                late = now - state.request_started > limits.request_seconds
            elif state.last_done is None:
                late = now - state.accepted > limits.header_seconds
            else:
                late = now - state.last_done > limits.idle_seconds
            if late:
                self.closed += 1
                transport.abort()  # no graceful TLS close: a slow peer would hold that up too
                del self._open[protocol]

    @contextlib.asynccontextmanager
    async def sweeping(self) -> AsyncIterator[None]:
        async def loop() -> None:
            while True:
                await asyncio.sleep(self.limits.sweep_seconds)
                self.sweep()

        task = asyncio.create_task(loop(), name="connection-sweep")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class GuardedSite(web.BaseSite):
    """``web.TCPSite`` with the guard's factory, a TLS handshake deadline and ``SO_REUSEPORT``."""

    __slots__ = ("_guard", "_host", "_port", "_reuse_port")

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str | None,
        port: int,
        *,
        ssl_context: Any,
        guard: ConnectionGuard,
        backlog: int = 1024,
        reuse_port: bool = False,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=backlog)
        self._host = host
        self._port = port
        self._guard = guard
        self._reuse_port = reuse_port

    @property
    def name(self) -> str:
        return f"https://{self._host or '0.0.0.0'}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self._guard.factory(server),
            self._host,
            self._port,
            ssl=self._ssl_context,
            backlog=self._backlog,
            reuse_address=True,
            reuse_port=self._reuse_port or None,
            ssl_handshake_timeout=self._guard.limits.handshake_seconds if self._ssl_context else None,
        )
