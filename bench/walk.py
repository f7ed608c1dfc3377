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
between calls into another module re-enters its own each time. The reconciler leg depends on timing (how many
passes and resyncs run before the release): its counts come in two or three shapes, some tens apart.
Printed, never asserted. Usage: ``.venv/bin/python -m bench.walk``.
"""

from __future__ import annotations

import asyncio
import base64
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jsonpatch
import orjson

from tests.doubles.fakekube import FakeKube
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
    def __init__(self) -> None:
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


def short(module: str) -> str:
    return module.removeprefix("webhook.")


@contextmanager
def traced() -> Iterator[Trace]:
    trace = Trace()
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
        with traced() as trace:
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


def main() -> None:
    mutated, webhook_leg = mutate(job())
    reconciler_leg = asyncio.run(release(mutated))
    report("mutating webhook", webhook_leg)
    report("reconciler to release", reconciler_leg)
    print(f"distinct over both legs: {len(set(webhook_leg.modules) | set(reconciler_leg.modules))}")


if __name__ == "__main__":
    main()
