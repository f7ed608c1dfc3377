"""The visibility API's HTTPS listener: Kueue's paths, behind the API server's aggregation layer.

Owns: the aiohttp routes (discovery of both versions, the ClusterQueue and LocalQueue ``pendingworkloads``),
the listener's TLS (our serving pair, client certificates verified against the front proxy's CA) and its
lifecycle. Every resource request is authenticated (front-proxy certificate, then the user headers) and
authorized with a SubjectAccessReview before anything is read; discovery is public, as the API server's own.
Must not: compute positions (``pending``, ``summary``) or decide who may (the API server does, ``auth``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import orjson
from aiohttp import web

from webhook.kube.client import Kube
from webhook.kube.errors import KubeError
from webhook.tls import CertificateReloader
from webhook.visibility import summary
from webhook.visibility.auth import Attributes, FrontProxy, Identity, SubjectAccessReviewer, common_name, identify
from webhook.visibility.pending import PendingIndex

log = logging.getLogger(__name__)

PREFIX: Final = f"/apis/{summary.GROUP}"
INDEX: Final = web.AppKey("pending_index", PendingIndex)
REVIEWER: Final = web.AppKey("reviewer", SubjectAccessReviewer)
TRUST: Final = web.AppKey("front_proxy", FrontProxy)


def _json(body: Mapping[str, object], status: int = 200) -> web.Response:
    # orjson: a list of 10,000 pending workloads is 3 MB, which the standard library takes 3-4 times longer to write.
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def _error(code: int, reason: str, message: str, **details: str) -> web.Response:
    return _json(summary.status(code, reason, message, details=details or None), code)


def _version(request: web.Request) -> str:
    version = request.match_info["version"]
    if version not in summary.VERSIONS:
        raise web.HTTPNotFound(
            text=f'{{"kind":"Status","apiVersion":"v1","status":"Failure","code":404,"reason":"NotFound",'
            f'"message":"the server could not find the requested resource (version {version})"}}',
            content_type="application/json",
        )
    return version


def _identity(request: web.Request) -> Identity | None:
    peercert = request.transport.get_extra_info("peercert") if request.transport is not None else None
    return identify(
        request.headers,
        peer_cn=common_name(peercert),
        trust=request.app[TRUST],
        all_headers=list(request.headers.items()),
    )


async def _authorize(request: web.Request, what: Attributes, kind: str) -> web.Response | None:
    """None when allowed; else the 401/403 the API server would send."""
    who = _identity(request)
    if who is None:
        return _error(401, "Unauthorized", "Unauthorized: requests must come through the API server")
    try:
        allowed, _reason = await request.app[REVIEWER].allowed(who, what)
    except KubeError as exc:
        log.warning("SubjectAccessReview failed: %s", exc)
        return _error(500, "InternalError", f"could not authorize the request: {exc}")
    if allowed:
        return None
    return _error(
        403,
        "Forbidden",
        f'{kind}.{summary.GROUP} "{what.name}" is forbidden: User "{who.user}" {what.describe()}',
        group=summary.GROUP,
        kind=kind,
        name=what.name,
    )


async def group_version(request: web.Request) -> web.Response:
    return _json(summary.resource_list(_version(request)))


async def group(request: web.Request) -> web.Response:
    versions = [{"groupVersion": f"{summary.GROUP}/{v}", "version": v} for v in summary.VERSIONS]
    return _json(
        {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": summary.GROUP,
            "versions": versions,
            "preferredVersion": versions[0],
        }
    )


async def cluster_queue_pending(request: web.Request) -> web.Response:
    version, name = _version(request), request.match_info["name"]
    what = Attributes("get", summary.GROUP, version, "clusterqueues", "pendingworkloads", name)
    if (refused := await _authorize(request, what, "clusterqueues")) is not None:
        return refused
    try:
        limit, offset = summary.parse_window(request.query)
    except ValueError as exc:
        return _error(400, "BadRequest", str(exc))
    queues = await request.app[INDEX].queues()
    if name not in queues.cluster_queues:
        return _error(404, "NotFound", f'clusterqueue.{summary.GROUP} "{name}" not found', name=name)
    pending = queues.pending.cluster_queue(name)
    return _json(summary.cluster_queue_summary(version, pending, limit=limit, offset=offset))


async def local_queue_pending(request: web.Request) -> web.Response:
    version = _version(request)
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    what = Attributes("get", summary.GROUP, version, "localqueues", "pendingworkloads", name, namespace)
    if (refused := await _authorize(request, what, "localqueues")) is not None:
        return refused
    try:
        limit, offset = summary.parse_window(request.query)
    except ValueError as exc:
        return _error(400, "BadRequest", str(exc))
    queues = await request.app[INDEX].queues()
    cq = queues.local_queues.get((namespace, name))
    if cq is None:
        return _error(404, "NotFound", f'localqueue.{summary.GROUP} "{name}" not found', name=name)
    pending = queues.pending.cluster_queue(cq)
    return _json(
        summary.local_queue_summary(version, pending, namespace=namespace, name=name, limit=limit, offset=offset)
    )


async def healthy(_: web.Request) -> web.Response:
    return web.Response(text="ok")


async def not_found(_: web.Request) -> web.Response:
    return _error(404, "NotFound", "the server could not find the requested resource")


def build_app(*, index: PendingIndex, reviewer: SubjectAccessReviewer, trust: FrontProxy) -> web.Application:
    app = web.Application()
    app[INDEX], app[REVIEWER], app[TRUST] = index, reviewer, trust
    app.router.add_get(PREFIX, group)
    app.router.add_get(PREFIX + "/{version}", group_version)
    app.router.add_get(PREFIX + "/{version}/clusterqueues/{name}/pendingworkloads", cluster_queue_pending)
    app.router.add_get(
        PREFIX + "/{version}/namespaces/{namespace}/localqueues/{name}/pendingworkloads", local_queue_pending
    )
    app.router.add_get("/healthz", healthy)
    app.router.add_get("/readyz", healthy)
    app.router.add_route("*", "/{tail:.*}", not_found)  # /openapi/v2 and v3 too: the aggregator copes
    return app


class VisibilityServer:
    """One HTTPS listener; ``start`` then ``close``. The serving pair is reloaded from disk like the webhook's."""

    def __init__(
        self,
        *,
        kube: Kube,
        index: PendingIndex,
        trust: FrontProxy,
        cert_file: Path,
        key_file: Path,
        host: str = "",
        port: int = 8082,
    ) -> None:
        self.reloader = CertificateReloader(cert_file, key_file, client_ca_pem=trust.client_ca_pem)
        self.app = build_app(index=index, reviewer=SubjectAccessReviewer(kube, clock=time.monotonic), trust=trust)
        self._host, self._port = host or None, port
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=5.0)

    async def start(self) -> None:
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port, ssl_context=self.reloader.context).start()
        log.info("serving the visibility API on %s", self._runner.addresses)

    @property
    def port(self) -> int:
        return int(self._runner.addresses[0][1])

    async def watch_certificates(self) -> None:
        await self.reloader.watch()

    async def close(self) -> None:
        await self._runner.cleanup()
