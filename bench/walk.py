"""The walk of one Job, measured: the modules of ``webhook/`` it runs through from the mutating webhook to its release.

Two legs, traced with ``sys.setprofile`` (every Python call whose module is ours counts):
1. the mutating webhook: one AdmissionReview of a labelled Job answered by ``answering.answer`` on a static view;
2. the reconciler: the mutated (suspended) Job created in the in-memory fake of our ``kube`` Protocol with a
   ResourceFlavor, ClusterQueue and LocalQueue, production's wiring (``build_cache`` + ``start_watches`` +
   ``Reconciler.run``) until the Job is released (``suspend: false``).
For each leg: the distinct modules entered, the hops (consecutive calls in different modules of ours), and the
re-entries: hops into a module the walk had already been in and left for others (the walk coming back to a module
rather than going on), in all and for the modules with the most, with the hops that come back most often (``a>b``:
a call in ``a`` followed by one in ``b``, which ``b`` had been left before). A straight line has none: each module
entered once. In all, re-entries are hops minus modules (a hop enters a module either for the first time or
again); where they happen is what the lists say. Last, the bounces: a call into ``b`` between two calls in ``a``
(``a>b.function>a``), by the function called: an accessor called from far away, or a helper and its caller
taking turns, shows up there. Only calls count (``sys.setprofile``'s "call" events): a callee returning to its
caller is not a re-entry, its caller calling into that module again is; so a generator or comprehension resumed
between calls into another module re-enters its own each time. Re-entries count a caller going on after its
callee returned; what says whether the walk reads as a straight line is the next measure: the calls against the
imports, a new call from one of our modules into one it does not import (directly or through others, as
``tests/unit/test_layers`` builds the graph), by ``caller>module.function``. The import graph has no cycles, so
the walk goes down it everywhere else; these are where control is handed back up (a sink, a listener, a state
object implemented above the machine that calls it). The roots are the calls with none of our modules on the stack
(a task starting, a callback the event loop runs): where the walk starts again. The reconciler leg depends on
timing (how many passes and resyncs run before the release): its counts come in two or three shapes, some tens
apart.
Printed, never asserted. Usage: ``.venv/bin/python -m bench.walk``.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jsonpatch
import orjson

from tests.doubles.fakekube import FakeKube
from tests.unit.test_layers import import_graph
from webhook.admission import answering, endpoints
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView
from webhook.api import constants
from webhook.controller.reconciler import Reconciler
from webhook.controller.supervisor import Supervisor
from webhook.controller.watches import build_cache, start_watches
from webhook.kube import resources as r

NS = "walk"


class Trace:
    def __init__(self, segment: types.CodeType | None = None) -> None:
        """``segment``: the code whose every call starts a new segment (a reconciler pass) for the come-backs."""
        self._segment = segment
        self.segments = 0
        self.comebacks: Counter[str] = Counter()  # per "caller>module.function", calls against the imports
        self.roots: Counter[str] = Counter()  # per module, calls with none of our modules on the stack
        self._frames: dict[int, types.FrameType] = {}  # every frame seen (held: their ids are never reused)
        self.modules: list[str] = []
        self.hops = 0
        self.reentries: Counter[str] = Counter()  # per module re-entered
        self.returns: Counter[str] = Counter()  # per hop "left>re-entered"
        self.bounces: Counter[str] = Counter()  # per "a>b.function>a"
        self._seen: set[str] = set()
        self._last = ""
        self._before_last = ""
        self._last_function = ""

    def __call__(self, frame: types.FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith("webhook."):
            return
        self._come_back(frame, module)
        if module == self._last:
            return
        self.hops += 1
        if module in self._seen:
            self.reentries[module] += 1
            self.returns[f"{short(self._last)}>{short(module)}"] += 1
        else:
            self._seen.add(module)
            self.modules.append(module)
        if module == self._before_last:
            self.bounces[f"{short(module)}>{short(self._last)}.{self._last_function}>{short(module)}"] += 1
        self._before_last, self._last, self._last_function = self._last, module, frame.f_code.co_qualname

    def _come_back(self, frame: types.FrameType, module: str) -> None:
        """A new call (not a generator or coroutine resumed) from a module of ours into one it does not import,
        directly or through others: control handed back up, against the imports (a callback, a listener, a
        protocol implemented above). Calls with none of our modules on the stack (a task started, a callback
        run by the event loop) are where the walk starts again: counted as roots."""
        if id(frame) in self._frames:
            return  # resumed
        self._frames[id(frame)] = frame
        if frame.f_code is self._segment:
            self.segments += 1
        back = frame.f_back
        while back is not None and not str(back.f_globals.get("__name__", "")).startswith("webhook."):
            back = back.f_back
        if back is None:
            self.roots[short(module)] += 1
            return
        caller = str(back.f_globals.get("__name__", ""))
        if caller != module and module not in reachable(caller):
            self.comebacks[f"{short(caller)}>{short(module)}.{frame.f_code.co_qualname}"] += 1


@functools.cache
def reachable(module: str) -> frozenset[str]:
    """The modules of ours ``module`` imports, directly or through others (anywhere in them)."""
    graph, seen, todo = import_graph(), set(), [module]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return frozenset(seen)


def short(module: str) -> str:
    return module.removeprefix("webhook.")


@contextmanager
def traced(segment: types.CodeType | None = None) -> Iterator[Trace]:
    trace = Trace(segment)
    profile: Callable[[types.FrameType, str, Any], object] = trace
    sys.setprofile(profile)
    try:
        yield trace
    finally:
        sys.setprofile(None)


def job() -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "walk", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def mutate(obj: dict[str, Any]) -> tuple[dict[str, Any], Trace]:
    options = AdmissionOptions()
    endpoint = next(e for e in endpoints.enabled(options) if e.mutating and e.kind == "Job")
    request = {
        "uid": "00000000-0000-4000-8000-000000000001",
        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
        "namespace": NS,
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": obj,
        "oldObject": None,
    }
    body = orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    view = StaticView(namespaces={NS: {}}, local_queues={(NS, "user-queue")})
    with traced() as trace:  # the review only, not building the options and the view
        status, answer = answering.answer(endpoint, body, view, options)
    response = orjson.loads(answer)["response"]
    if status != 200 or not response["allowed"] or "patch" not in response:
        raise RuntimeError(f"the mutating webhook did not patch the Job: {status} {response}")
    patch = jsonpatch.JsonPatch(orjson.loads(base64.b64decode(response["patch"])))
    mutated: dict[str, Any] = patch.apply(obj)
    return mutated, trace


async def queues(kube: FakeKube) -> None:
    v = constants.API_VERSION
    await kube.create(r.NAMESPACE, {"metadata": {"name": NS}})
    await kube.create(r.RESOURCE_FLAVOR, {"apiVersion": v, "kind": "ResourceFlavor", "metadata": {"name": "pool"}})
    group = {
        "coveredResources": ["cpu"],
        "flavors": [{"name": "pool", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
    }
    cq_spec = {"namespaceSelector": {}, "resourceGroups": [group]}
    await kube.create(
        r.CLUSTER_QUEUE, {"apiVersion": v, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": cq_spec}
    )
    lq = {"apiVersion": v, "kind": "LocalQueue", "metadata": {"name": "user-queue", "namespace": NS}}
    await kube.create(r.LOCAL_QUEUE, lq | {"spec": {"clusterQueue": "cq"}})


async def release(mutated: dict[str, Any]) -> Trace:
    kube = FakeKube()
    await queues(kube)
    async with Supervisor() as supervisor:
        cache = build_cache()
        start_watches(kube, cache, supervisor)
        reconciler = Reconciler(kube, cache, resync_seconds=0.5)
        supervisor.spawn(reconciler.run(), name="reconciler")
        await asyncio.sleep(0.5)  # the watches' first lists, before the Job exists: not part of its walk
        with traced(Reconciler.pass_once.__code__) as trace:
            await kube.create(r.JOB, mutated, namespace=NS)
            for _ in range(300):
                if not (await kube.get(r.JOB, "walk", namespace=NS))["spec"].get("suspend"):
                    break
                await asyncio.sleep(0.05)
            else:
                raise RuntimeError("the Job was not released in 15 s")
    return trace


def report(leg: str, trace: Trace, *, top: int = 12) -> None:
    reentries = sum(trace.reentries.values())
    print(f"{leg}: {len(trace.modules)} modules, {trace.hops} hops, {reentries} re-entries")
    print("  " + " ".join(short(m) for m in trace.modules))
    if reentries:
        print("  most re-entered: " + ", ".join(f"{short(m)} {n}" for m, n in trace.reentries.most_common(top)))
        print("  most frequent returns: " + ", ".join(f"{hop} {n}" for hop, n in trace.returns.most_common(top)))
        print("  most frequent bounces: " + ", ".join(f"{b} {n}" for b, n in trace.bounces.most_common(top)))
    comebacks = sum(trace.comebacks.values())
    per = f" in {trace.segments} passes" if trace.segments else ""
    print(f"  calls against the imports (into a module the caller does not import): {comebacks}{per}")
    if comebacks:
        print("    " + ", ".join(f"{hop} {n}" for hop, n in trace.comebacks.most_common(top)))
    roots = ", ".join(f"{m} {n}" for m, n in trace.roots.most_common(top))
    print(f"  roots (none of our modules on the stack): {roots}")


def main() -> None:
    mutated, webhook_leg = mutate(job())
    reconciler_leg = asyncio.run(release(mutated))
    report("mutating webhook", webhook_leg)
    report("reconciler to release", reconciler_leg)
    print(f"distinct over both legs: {len(set(webhook_leg.modules) | set(reconciler_leg.modules))}")


if __name__ == "__main__":
    main()
