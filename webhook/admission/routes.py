"""Thin aiohttp routes: read the body, decode the AdmissionReview, ask one policy, encode the answer.

Bodies are read with a size limit and a time limit and no buffer outlives a failed read (``read_body``); a client
that goes away is answered 499 in the metrics, never 500; metric labels are route names, never raw paths.
A malformed review is HTTP 400 with the reason; an AdmissionReview over the API server's 3 MiB limit is 413 (a
ConversionReview on ``/convert``, answered by ``conversionreview``, may be far larger); a policy denial is HTTP 200
with ``allowed: false``. The path of an integration that is off (a webhook left registered from an earlier
configuration) answers "allowed", unchanged: Turnstile manages nothing of that kind, so there is nothing to protect,
while an error would block those objects (e.g. every pod of an admitted Job whose template carries a queue label).
Any other unknown path is 404. A bug in a policy never becomes a 500: the request is refused (fail closed) with a
message pointing at the logs. ``/healthz`` answers while the process runs; ``/readyz`` only once TLS serves and
the cluster view is synced.
Must not: reach the API server, or hold policy logic.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import ClientPayloadError, web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler

from webhook.admission import answering, conversionreview, review
from webhook.admission.endpoints import ENDPOINTS, Endpoint, enabled
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import ClusterView

log = logging.getLogger(__name__)

# The API server refuses request bodies over 3 MiB itself, so a larger AdmissionReview is not from it.
MAX_BODY_BYTES: Final = 3 * 1024 * 1024
# A ConversionReview carries a whole list read (thousands of Workloads) and has no such limit: the server's own
# cap is this, and admission routes check theirs themselves.
MAX_CONVERSION_BYTES: Final = 512 * 1024 * 1024
# The API server sends a whole body at once over loopback or the cluster network: a body still arriving after this
# long is a slow client holding a buffer and a connection.
BODY_TIMEOUT_SECONDS: Final = 10.0
CONVERSION_TIMEOUT_SECONDS: Final = 60.0
# Reviews larger than this are answered by a review worker process when the server has them.
OFFLOAD_BYTES: Final = 128 * 1024
UNKNOWN_ROUTE: Final = "unknown"
# nginx's code for "the client closed the request": counted apart from the server's own errors.
CLIENT_CLOSED: Final = 499


@dataclass
class Readiness:
    """Set by the server once its TLS listener accepts connections."""

    tls_serving: bool = False


VIEW: Final = web.AppKey("view", ClusterView)
OPTIONS: Final = web.AppKey("options", AdmissionOptions)
READINESS: Final = web.AppKey("readiness", Readiness)
# Called once per admission request with (path, HTTP status, seconds): the metrics hook, kept as a plain callable
# so this layer knows nothing of Prometheus.
Observer = Callable[[str, int, float], None]

# Answers a large review off the serving loop: same status and body as ``answering.answer``.
Offload = Callable[[Endpoint, bytes], Awaitable[tuple[int, bytes]]]
OFFLOAD: Final = web.AppKey[Offload | None]("offload")

_JSON = "application/json"
# Where the CRDs' spec.conversion.webhook.clientConfig points.
CONVERT_PATH: Final = "/convert"


def _json(status: int, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, content_type=_JSON)


def _bad_request(reason: str) -> web.Response:
    return _json(*answering.bad_request(reason))


class ClientGone(Exception):
    """The client closed the connection before its body was read; nobody is left to answer."""


async def read_body(request: web.Request, limit: int, seconds: float = BODY_TIMEOUT_SECONDS) -> bytes:
    """The whole body, at most ``limit`` bytes, within ``seconds``.

    Raises 413 beyond the limit (announced or sent), 408 when the body is too slow, ``ClientGone`` when the client
    goes away. The partial body is cleared before any of these propagate: an exception's traceback keeps this
    frame alive until a full garbage collection, and the buffer with it (3 MiB per aborted upload, issue 18).
    """
    if request.content_length is not None and request.content_length > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length)
    # Chunks joined once at the end: growing one buffer would reallocate it at every size up to 3 MiB.
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(seconds):
            await _read_into(request, limit, chunks)
    except TimeoutError:
        chunks.clear()
        raise web.HTTPRequestTimeout(text=f"the request body was not received within {seconds:.0f}s") from None
    except (ConnectionError, ClientPayloadError, asyncio.IncompleteReadError):
        chunks.clear()
        raise ClientGone from None
    except HttpProcessingError as exc:
        chunks.clear()
        raise web.HTTPBadRequest(text=f"malformed request body: {exc.message}") from None
    except BaseException:
        chunks.clear()
        raise
    data = b"".join(chunks)
    chunks.clear()
    return data


async def _read_into(request: web.Request, limit: int, chunks: list[bytes]) -> None:
    """Appends the body's chunks to ``chunks``. A failed read's traceback keeps this frame alive, and the caller's
    ``raise ... from None`` still links it as the context: the last chunk (up to aiohttp's read buffer, 256 KiB) must
    not stay in a local here."""
    size = 0
    chunk = b""
    try:
        while chunk := await request.content.readany():
            size += len(chunk)
            if size > limit:
                raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=size)
            chunks.append(chunk)
    finally:
        chunk = b""


def _disabled(endpoint: Endpoint) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return _json(*answering.allow_disabled(endpoint, await read_body(request, MAX_BODY_BYTES)))

    return handle


def _handler(endpoint: Endpoint) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await read_body(request, MAX_BODY_BYTES)
        offload = request.app[OFFLOAD]
        if offload is not None and len(body) > OFFLOAD_BYTES:
            # Decoding a body this large holds the interpreter for tens of milliseconds (orjson does not release
            # the GIL): it is answered in a worker process so the small reviews on this loop do not wait.
            return _json(*await offload(endpoint, body))
        return _json(*answering.answer(endpoint, body, request.app[VIEW], request.app[OPTIONS]))

    return handle


async def convert(request: web.Request) -> web.Response:
    """The CRD conversion webhook (ConversionReview v1), served next to the admission routes."""
    body = await read_body(request, MAX_CONVERSION_BYTES, seconds=CONVERSION_TIMEOUT_SECONDS)
    try:
        return web.Response(body=conversionreview.answer(body), content_type=_JSON)
    except review.MalformedReview as exc:
        return _bad_request(exc.reason)


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    if not request.app[READINESS].tls_serving:
        return web.Response(status=503, text="TLS listener not serving yet")
    if not request.app[VIEW].synced():
        return web.Response(status=503, text="cluster cache not synced yet")
    return web.Response(text="ok")


def route_label(request: web.Request) -> str:
    """The route a request matched (``/mutate/batch/v1/jobs``), or ``unknown``: a metric label never takes the raw
    path, which any client can vary at will (20,000 random paths made 440,000 series, issue 18)."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else UNKNOWN_ROUTE


@web.middleware
async def _client_gone(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ClientGone:
        return web.Response(status=CLIENT_CLOSED, reason="Client Closed Request")


def _observing(observe: Observer) -> Callable[[web.Request, Handler], object]:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method != "POST":
            return await handler(request)
        started = time.perf_counter()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        except (ConnectionError, asyncio.CancelledError):
            status = CLIENT_CLOSED  # the client went away: not a server error
            raise
        finally:
            observe(route_label(request), status, time.perf_counter() - started)

    return middleware


def build_app(
    *,
    view: ClusterView,
    options: AdmissionOptions,
    readiness: Readiness | None = None,
    observe: Observer | None = None,
    offload: Offload | None = None,
) -> web.Application:
    """The webhook application: one POST route per enabled endpoint, /convert, plus health and readiness.

    ``offload`` answers reviews larger than ``OFFLOAD_BYTES`` elsewhere (the review worker processes)."""
    middlewares = [_observing(observe)] if observe is not None else []
    middlewares.append(_client_gone)
    app = web.Application(client_max_size=MAX_CONVERSION_BYTES, middlewares=middlewares)  # type: ignore[arg-type]
    app[VIEW] = view
    app[OFFLOAD] = offload
    app[OPTIONS] = options
    app[READINESS] = readiness if readiness is not None else Readiness()
    on = enabled(options)
    for endpoint in ENDPOINTS:
        app.router.add_post(endpoint.path, _handler(endpoint) if endpoint in on else _disabled(endpoint))
    app.router.add_post(CONVERT_PATH, convert)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
