"""``turnstile dashboard``: the web server, its watch-fed cache and its live updates.

Owns: which kinds are watched with the user's credentials (cluster-wide when they may, else their namespace),
the aiohttp routes (the overview, a workload's detail with its events, the fit form's answer, the server-sent
event stream that pushes the re-rendered queues whenever the cache changes), and the command's lifecycle.
Must not: decide anything (``core.schedule`` and ``core.fit`` do) or lay out HTML (``pages``).

It listens on loopback by default: whoever reaches the page acts with the kubeconfig's identity.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import yaml
from aiohttp import web

from webhook.controller.cache import ClusterCache
from webhook.controller.informer import WatchSpec
from webhook.controller.supervisor import Supervisor
from webhook.controller.watches import build_cache, start_watches
from webhook.core.fit import explain_workload, would_fit
from webhook.core.snapshot import Snapshot
from webhook.core.snapshotparse import SnapshotParser
from webhook.dashboard import pages
from webhook.kube import resources as r
from webhook.kube.apiserver import ApiServerKube
from webhook.kube.client import Kube
from webhook.kube.errors import Forbidden, KubeError
from webhook.usercli.candidate import NotAJob, candidate_workload
from webhook.usercli.views import cluster_queue_view
from webhook.visibility.pending import PendingIndex, Queues

log = logging.getLogger(__name__)

CACHE: Final = web.AppKey("cache", ClusterCache)
INDEX: Final = web.AppKey("index", PendingIndex)
KUBE: Final = web.AppKey("kube", Kube)
STOPPING: Final = web.AppKey("stopping", asyncio.Event)
DEBOUNCE_SECONDS = 0.3


async def watch_specs(kube: Kube, namespace: str) -> list[WatchSpec]:
    """Everything the page shows; namespaced kinds cluster-wide if the user may list them, else ``namespace``."""
    specs = [WatchSpec(r.CLUSTER_QUEUE), WatchSpec(r.RESOURCE_FLAVOR)]
    for optional in (r.NAMESPACE, r.WORKLOAD_PRIORITY_CLASS, r.PRIORITY_CLASS):
        with contextlib.suppress(Forbidden):
            await kube.list(optional, label_selector="turnstile.x-k8s.io/permission-probe=none")
            specs.append(WatchSpec(optional))
    for namespaced in (r.LOCAL_QUEUE, r.WORKLOAD):
        try:
            await kube.list(namespaced, label_selector="turnstile.x-k8s.io/permission-probe=none")
            specs.append(WatchSpec(namespaced))
        except Forbidden:
            specs.append(WatchSpec(namespaced, namespace=namespace))
    return specs


def _queues_html(app: web.Application, queues: Queues) -> str:
    cache = app[CACHE]
    views = [cluster_queue_view(o) for o in cache.items(r.CLUSTER_QUEUE)]
    return pages.queues_fragment(views, {v.name: queues.pending.cluster_queue(v.name) for v in views})


async def overview(request: web.Request) -> web.Response:
    queues = await request.app[INDEX].queues()
    return web.Response(text=pages.overview(_queues_html(request.app, queues)), content_type="text/html")


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: the queues fragment now, then again after every change of the cache (debounced)."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    cache, index = request.app[CACHE], request.app[INDEX]
    seen = -1
    try:
        while not request.app[STOPPING].is_set():
            if cache.generation == seen:
                waiter = asyncio.ensure_future(cache.wait_changed(seen))
                stopper = asyncio.ensure_future(request.app[STOPPING].wait())
                done, pending = await asyncio.wait({waiter, stopper}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
                for task in pending:
                    task.cancel()
                if not done:
                    await response.write(b": keep-alive\n\n")
                    continue
                await asyncio.sleep(DEBOUNCE_SECONDS)  # a burst of changes becomes one update
            seen = cache.generation
            html = _queues_html(request.app, await index.queues())
            data = "".join(f"data: {line}\n" for line in html.splitlines() or [""])
            await response.write(f"event: queues\n{data}\n".encode())
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    return response


def _snapshot(cache: ClusterCache) -> Snapshot:
    def items(resource: r.Resource) -> list[dict[str, object]]:
        try:
            return list(cache.items(resource))
        except KeyError:
            return []

    return SnapshotParser().snapshot(
        cluster_queues=items(r.CLUSTER_QUEUE),
        flavors=items(r.RESOURCE_FLAVOR),
        local_queues=items(r.LOCAL_QUEUE),
        workloads=items(r.WORKLOAD),
        namespaces=items(r.NAMESPACE),
    )


async def fit(request: web.Request) -> web.Response:
    form = await request.post()
    text, namespace = str(form.get("manifest", "")), str(form.get("namespace", "") or "default")
    cache = request.app[CACHE]

    def answer() -> str:
        try:
            docs = [d for d in yaml.safe_load_all(text) if d]
        except yaml.YAMLError as exc:
            return pages.fit_error(f"not YAML: {exc}")
        if len(docs) != 1:
            return pages.fit_error(f"give exactly one Job or Workload (got {len(docs)} objects)")
        try:
            wpcs = list(cache.items(r.WORKLOAD_PRIORITY_CLASS)) if cache.is_synced(r.WORKLOAD_PRIORITY_CLASS) else []
        except KeyError:
            wpcs = []
        try:
            subject, candidate = candidate_workload(docs[0], namespace=namespace, workload_priority_classes=wpcs)
        except NotAJob as exc:
            return pages.fit_error(str(exc))
        return pages.fit_answer(subject, would_fit(_snapshot(cache), candidate, now=datetime.now(UTC)))

    return web.Response(text=answer(), content_type="text/html")


async def workload(request: web.Request) -> web.Response:
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    obj = request.app[CACHE].workload(namespace, name)
    if obj is None:
        raise web.HTTPNotFound(text=f"workload {namespace}/{name} is not known (or you may not see it)")
    try:
        listed = await request.app[KUBE].list(
            r.EVENT, namespace=namespace, field_selector=f"involvedObject.name={name}"
        )
        history = sorted(listed.items, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    except KubeError:
        history = []
    answer = explain_workload(_snapshot(request.app[CACHE]), (namespace, name), now=datetime.now(UTC))
    html = pages.workload_detail(obj, history, answer, f"Workload {namespace}/{name}")
    return web.Response(text=html, content_type="text/html")


def build_app(kube: Kube, cache: ClusterCache, stopping: asyncio.Event) -> web.Application:
    app = web.Application()
    app[KUBE], app[CACHE], app[INDEX], app[STOPPING] = kube, cache, PendingIndex(cache, min_interval=0.2), stopping
    app.router.add_get("/", overview)
    app.router.add_get("/events", events)
    app.router.add_post("/fit", fit)
    app.router.add_get("/workloads/{namespace}/{name}", workload)
    return app


async def serve(*, kubeconfig: Path | None, context: str | None, namespace: str, host: str, port: int) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    client = ApiServerKube(kubeconfig=kubeconfig, context=context) if kubeconfig else ApiServerKube(in_cluster=True)
    async with client as kube, Supervisor() as supervisor:
        try:
            specs = await watch_specs(kube, namespace)
        except Forbidden:
            raise SystemExit("turnstile dashboard: you may not list ClusterQueues and ResourceFlavors") from None
        cache = build_cache(specs)
        start_watches(kube, cache, supervisor, specs=specs)
        runner = web.AppRunner(build_app(kube, cache, stopping), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        await cache.wait_synced()
        address = runner.addresses[0]
        print(f"Turnstile dashboard on http://{address[0]}:{address[1]}/ (Ctrl-C stops it)", flush=True)
        crashed = asyncio.ensure_future(supervisor.wait())
        stopper = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({crashed, stopper}, return_when=asyncio.FIRST_COMPLETED)
        stopping.set()
        for task in (crashed, stopper):
            task.cancel()
        await runner.cleanup()


def main(*, kubeconfig: Path | None, context: str | None, namespace: str, host: str, port: int) -> int:
    try:
        asyncio.run(serve(kubeconfig=kubeconfig, context=context, namespace=namespace, host=host, port=port))
    except KubeError as exc:
        print(f"turnstile dashboard: {exc.message}", file=sys.stderr)
        return 1
    return 0
