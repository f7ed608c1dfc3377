"""Memory and time of the reconciler's cache holding N Workloads, through the production code path; and how often
a reconciler pass decodes a Workload into the typed model.

1. **Cache** (``--items``, default 50,000): a child process plays the API server's Workload list (pages of 500,
   ``limit``/``continue``, v1beta2 items as ``bench.decode`` builds them, with ``managedFields`` as the API server
   writes them for such an object: one entry per writer, fieldsV1 mirroring every field it set, pod template
   included; ``--unique``: with the pod template labels and times that differ between real Jobs' Workloads).
   This process lists them with the real client (``ApiServerKube``, over plain HTTP) and the real ``Informer``
   into the real ``ClusterCache``, then reads every Workload typed twice, as two of ``WorkloadSync``'s full
   passes would. Printed: RSS (``VmRSS``) and peak RSS (``VmHWM``) after imports, after the list, after each
   pass, the seconds each step took and the garbage collections it ran (per generation; a full collection after
   the list is taken on its own, so the passes do not pay for the list's).
2. **Passes** (``--pass-items``, default 2,000): the real ``Reconciler`` on the in-memory fake with that many
   pending bare Workloads, three full passes; printed, the ``decode_workload`` calls per pass.

Printed, never asserted. Run one at a time, through the bench lock:
``flock /tmp/turnstile-bench.lock .venv/bin/python -m bench.cache [--items 50000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import multiprocessing
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.decode import workload
from bench.machine import describe

PAGE = 500


# -- what the API server stores -----------------------------------------------------------------------------------


def fields_v1(value: Any) -> Any:
    """The fieldsV1 set of a value, as the API server records what one writer set: ``f:<key>`` per map key, ``k:{..}``
    per list item with a key (uid, type, name), ``v:<json>`` per scalar list item, ``{}`` for a leaf."""
    if isinstance(value, dict):
        return {f"f:{k}": fields_v1(v) for k, v in value.items()}
    if isinstance(value, list):
        out: dict[str, Any] = {}
        for item in value:
            if isinstance(item, dict):
                key = next((k for k in ("uid", "type", "name") if k in item), None)
                ident = {key: item[key]} if key else item
                out[f"k:{json.dumps(ident, separators=(',', ':'))}"] = {".": {}, **fields_v1(item)}
            else:
                out[f"v:{json.dumps(item)}"] = {}
        return out
    return {}


def distinct(wl: dict[str, Any], i: int) -> dict[str, Any]:
    """What differs between the Workloads of real Jobs beyond their names: the labels the Job controller puts on
    its pod template (``controller-uid``, ``job-name``), and the times, twenty Workloads created per second."""
    when = f"2026-01-01T{i // 72000 % 24:02d}:{i // 1200 % 60:02d}:{i // 20 % 60:02d}Z"
    wl["metadata"]["creationTimestamp"] = when
    for condition in wl["status"]["conditions"]:
        condition["lastTransitionTime"] = when
    labels = wl["spec"]["podSets"][0]["template"]["metadata"]["labels"]
    labels["batch.kubernetes.io/controller-uid"] = wl["metadata"]["ownerReferences"][0]["uid"]
    labels["batch.kubernetes.io/job-name"] = labels["job-name"] = wl["metadata"]["ownerReferences"][0]["name"]
    return wl


def stored_workload(i: int, *, unique: bool = False) -> dict[str, Any]:
    """``bench.decode``'s Workload with the managedFields its two writers (the reconciler creating it, the status
    subresource admitting it) leave on a real API server; ``unique``: with what differs between real Jobs."""
    wl = distinct(workload(i), i) if unique else workload(i)
    meta = wl["metadata"]
    created = {
        "metadata": {k: meta[k] for k in ("labels", "finalizers", "ownerReferences")},
        "spec": wl["spec"],
    }
    when = meta["creationTimestamp"]
    meta["managedFields"] = [
        {
            "apiVersion": wl["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(created),
            "manager": "turnstile",
            "operation": "Update",
            "time": when,
        },
        {
            "apiVersion": wl["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1({"status": wl["status"]}),
            "manager": "turnstile",
            "operation": "Update",
            "subresource": "status",
            "time": when,
        },
    ]
    return wl


def serve(port: int, items: int, unique: bool, ready: Any) -> None:
    """The child process: the Workload list in pages, and watches that stay open and silent."""
    from aiohttp import web

    async def workloads(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            response = web.StreamResponse()
            with contextlib.suppress(ConnectionResetError):  # the client went away (the bench is done listing)
                await response.prepare(request)
                await asyncio.sleep(3600)
            return response
        start = int(request.query.get("continue") or 0)
        end = min(items, start + int(request.query.get("limit") or items))
        meta: dict[str, Any] = {"resourceVersion": "200000"}
        if end < items:
            meta["continue"] = str(end)
        page = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadList", "metadata": meta}
        page["items"] = [stored_workload(i, unique=unique) for i in range(start, end)]
        return web.Response(body=orjson.dumps(page), content_type="application/json")

    app = web.Application()
    app.router.add_get("/apis/kueue.x-k8s.io/v1beta2/workloads", workloads)

    async def main() -> None:
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        ready.set()
        await asyncio.sleep(86400)

    asyncio.run(main())


# -- measuring ----------------------------------------------------------------------------------------------------


def rss() -> str:
    fields = dict(
        line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("Vm")
    )
    mib = {k: int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")}
    return f"RSS {mib['VmRSS']:7.1f} MiB (peak {mib['VmHWM']:7.1f} MiB)"


def collections() -> list[int]:
    return [int(s["collections"]) for s in gc.get_stats()]


def collected_since(before: list[int]) -> str:
    """The garbage collections run since ``before``, per generation (a full one walks the whole heap)."""
    return "gc " + "/".join(str(now - then) for now, then in zip(collections(), before, strict=True))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubeconfig(directory: Path, port: int) -> Path:
    path = directory / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bench", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "bench", "user": {"token": "bench"}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
        "current-context": "bench",
    }
    path.write_text(json.dumps(config))
    return path


class Counted:
    """``webhook.api.model.decode_workload``, counting its calls."""

    def __init__(self) -> None:
        from webhook.api import model

        self.calls = 0
        self._model = model
        self._real: Callable[..., Any] = model.decode_workload

        def counted(raw: Any) -> Any:
            self.calls += 1
            return self._real(raw)

        model.decode_workload = counted  # type: ignore[assignment]

    def restore(self) -> None:
        self._model.decode_workload = self._real  # type: ignore[assignment]


def typed_reader(cache: Any) -> Callable[[Any], Any]:
    """How ``WorkloadSync`` gets the typed Workload of a cached one (the cache's memo where there is one; a dict decoded
    where the cache hands out dicts)."""
    from webhook.api import model

    read = getattr(cache, "typed_workload", None)
    return read if read is not None else lambda obj: model.decode_workload(obj)


async def cache_figures(items: int, *, unique: bool) -> None:
    from webhook.controller.cache import ClusterCache
    from webhook.controller.informer import Informer, WatchSpec
    from webhook.kube import resources as r
    from webhook.kube.apiserver import ApiServerKube

    print(f"after imports:          {rss()}")
    port = free_port()
    ready = multiprocessing.get_context("spawn").Event()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(port, items, unique, ready), daemon=True)
    server.start()
    try:
        ready.wait(30)
        with tempfile.TemporaryDirectory() as tmp:
            async with ApiServerKube(kubeconfig=kubeconfig(Path(tmp), port)) as kube:
                print(f"client ready:           {rss()}")
                cache = ClusterCache([r.WORKLOAD])
                informer = Informer(kube, WatchSpec(r.WORKLOAD), cache, each=cache.stored_form)
                started, gcs = time.perf_counter(), collections()
                task = asyncio.create_task(informer.run())
                await informer.wait_synced()
                listed = time.perf_counter() - started
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        assert cache.count(r.WORKLOAD) == items, cache.count(r.WORKLOAD)
        print(f"listed {items} Workloads: {rss()}  {listed:6.2f} s, {collected_since(gcs)}")
        # The full collection the list's allocations are owed, taken now so the passes below do not pay it.
        started = time.perf_counter()
        gc.collect()
        print(f"full gc after the list: {rss()}  {time.perf_counter() - started:6.2f} s")
        counter = Counted()
        read = typed_reader(cache)
        for n in (1, 2):
            before, started, gcs = counter.calls, time.perf_counter(), collections()
            for obj in cache.workloads():
                read(obj)
            took = time.perf_counter() - started
            calls = counter.calls - before
            print(
                f"typed pass {n}:           {rss()}  {took:6.2f} s,",
                f"{calls} decode_workload calls, {collected_since(gcs)}",
            )
        counter.restore()
    finally:
        server.kill()


async def pass_figures(items: int) -> None:
    from datetime import UTC, datetime, timedelta

    from tests.doubles.fakekube import FakeKube
    from tests.unit.controller.test_admitter import make_cluster_queue, make_local_queue
    from tests.unit.controller.test_reconciler import NS, bare_workload
    from tests.unit.jobs.builders import make_flavor
    from webhook.controller.reconciler import Reconciler
    from webhook.controller.watches import CACHE_WATCHES, build_cache
    from webhook.kube import resources as r

    now = datetime(2025, 1, 1, tzinfo=UTC)
    kube = FakeKube(clock=lambda: now)
    for resource, obj in (
        (r.NAMESPACE, {"metadata": {"name": NS}}),
        (r.RESOURCE_FLAVOR, make_flavor("default")),
        (r.CLUSTER_QUEUE, make_cluster_queue("cq", flavor="default", cpu="0")),
        (r.LOCAL_QUEUE, make_local_queue(NS, "q", "cq")),
    ):
        await kube.create(resource, obj)
    for i in range(items):
        await kube.create(r.WORKLOAD, bare_workload(f"w{i}"))
    cache = build_cache()
    reconciler = Reconciler(kube, cache, clock=lambda: now, full_resync_seconds=0)
    counter = Counted()
    try:
        for n in (1, 2, 3):
            for spec in CACHE_WATCHES:
                cache.replace(spec.resource, kube.objects(spec.resource))
            before = counter.calls
            await reconciler.pass_once()
            print(f"reconciler full pass {n} over {items} Workloads: {counter.calls - before} decode_workload calls")
            now += timedelta(seconds=1)
    finally:
        counter.restore()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=50_000, help="Workloads listed into the cache (0: skip)")
    parser.add_argument("--pass-items", type=int, default=2_000, help="Workloads of the reconciler passes (0: skip)")
    parser.add_argument(
        "--unique", action="store_true", help="pod template labels and times that differ per Workload, as real Jobs'"
    )
    args = parser.parse_args()
    print(describe())
    size = len(orjson.dumps(stored_workload(0, unique=args.unique)))
    print(f"one stored Workload: {size} bytes of JSON")
    if args.items:
        asyncio.run(cache_figures(args.items, unique=args.unique))
    if args.pass_items:
        asyncio.run(pass_figures(args.pass_items))


if __name__ == "__main__":
    main()
