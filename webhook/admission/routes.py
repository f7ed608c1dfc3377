"""Thin aiohttp routes: read the body, decode the AdmissionReview, ask one policy, encode the answer.

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

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler

from webhook.admission import conversionreview, review
from webhook.admission.endpoints import ENDPOINTS, Endpoint, enabled
from webhook.admission.options import AdmissionOptions
from webhook.admission.verdict import ALLOW, deny
from webhook.admission.view import ClusterView

log = logging.getLogger(__name__)

# The API server refuses request bodies over 3 MiB itself, so a larger AdmissionReview is not from it.
MAX_BODY_BYTES: Final = 3 * 1024 * 1024
# A ConversionReview carries a whole list read (thousands of Workloads) and has no such limit: the server's own
# cap is this, and admission routes check theirs themselves.
MAX_CONVERSION_BYTES: Final = 512 * 1024 * 1024


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

_JSON = "application/json"
# Where the CRDs' spec.conversion.webhook.clientConfig points.
CONVERT_PATH: Final = "/convert"


def _bad_request(reason: str) -> web.Response:
    return web.Response(status=400, body=orjson.dumps({"reason": reason}), content_type=_JSON)


def _disabled(endpoint: Endpoint) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            decoded = review.decode(await request.read())
        except review.MalformedReview as exc:
            return _bad_request(exc.reason)
        log.warning("%s called, but its integration %s is off: allowed unchanged", endpoint.path, endpoint.framework)
        return web.Response(body=review.encode(decoded.uid, ALLOW, mutating=endpoint.mutating), content_type=_JSON)

    return handle


async def _read_at_most(request: web.Request, limit: int) -> bytes:
    too_large = web.HTTPRequestEntityTooLarge
    if request.content_length is not None and request.content_length > limit:
        raise too_large(max_size=limit, actual_size=request.content_length)
    body = await request.read()  # raises 413 beyond the app's client_max_size
    if len(body) > limit:
        raise too_large(max_size=limit, actual_size=len(body))
    return body


def _handler(endpoint: Endpoint) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await _read_at_most(request, MAX_BODY_BYTES)
        try:
            decoded = review.decode(body)
            if (decoded.group, decoded.kind) != (endpoint.group, endpoint.kind):
                raise review.MalformedReview(
                    f"{endpoint.path} reviews {endpoint.kind} objects, not {decoded.group}/{decoded.kind}"
                )
            verdict = endpoint.policy(decoded, request.app[VIEW], request.app[OPTIONS])
        except review.MalformedReview as exc:
            return _bad_request(exc.reason)
        except Exception:
            uid = review.uid_of(body)
            log.exception("policy %s failed on request %s", endpoint.name, uid)
            if uid is None:
                return _bad_request("the review could not be evaluated")
            message = f"Turnstile could not evaluate this request (internal error in {endpoint.name}; see its logs)"
            return web.Response(body=review.encode(uid, deny(message), mutating=endpoint.mutating), content_type=_JSON)
        return web.Response(body=review.encode(decoded.uid, verdict, mutating=endpoint.mutating), content_type=_JSON)

    return handle


async def convert(request: web.Request) -> web.Response:
    """The CRD conversion webhook (ConversionReview v1), served next to the admission routes."""
    body = await request.read()
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
        finally:
            observe(request.path, status, time.perf_counter() - started)

    return middleware


def build_app(
    *,
    view: ClusterView,
    options: AdmissionOptions,
    readiness: Readiness | None = None,
    observe: Observer | None = None,
) -> web.Application:
    """The webhook application: one POST route per enabled endpoint, /convert, plus health and readiness."""
    middlewares = [_observing(observe)] if observe is not None else []
    app = web.Application(client_max_size=MAX_CONVERSION_BYTES, middlewares=middlewares)  # type: ignore[arg-type]
    app[VIEW] = view
    app[OPTIONS] = options
    app[READINESS] = readiness if readiness is not None else Readiness()
    on = enabled(options)
    for endpoint in ENDPOINTS:
        app.router.add_post(endpoint.path, _handler(endpoint) if endpoint in on else _disabled(endpoint))
    app.router.add_post(CONVERT_PATH, convert)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
