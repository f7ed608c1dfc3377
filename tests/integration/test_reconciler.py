"""The reconciler in-process, whole passes, against both the in-memory fake and a real kube-apiserver.

The same scenarios run on both sides, with production's wiring (``build_cache`` + ``start_watches`` feeding the
cache, ``Reconciler.run`` on top) and no webhook: the tests create Jobs already suspended, as the mutating
webhook would have left them. Every assertion reads the API (the fake's store, or the real server), never the
reconciler's cache. The real side runs on a cluster of its own, because the end-to-end tests run a Turnstile
process on the shared one that would reconcile the same objects. Where the two sides must differ (finishing a
Job: on the real server kube-controller-manager's job controller completes it once its pods succeed; the fake
has no controllers, so the test writes the Job's status as that controller would) the fixture says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.doubles.fakekube import FakeKube
from tests.sessioncluster import started_cluster
from webhook.api import constants
from webhook.controller.reconciler import Reconciler
from webhook.controller.supervisor import Supervisor
from webhook.controller.watches import build_cache, start_watches
from webhook.kube import errors
from webhook.kube import resources as r
from webhook.kube.apiserver import ApiServerKube
from webhook.kube.client import Kube
from webhook.kube.objects import Object
from webhook.local.cluster import LocalCluster

pytestmark = pytest.mark.integration

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
FLAVOR_LABEL = "turnstile.test/pool"


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from started_cluster(tmp_path_factory, "reconciler")


@dataclass
class World:
    """One side: a client, a namespace and cluster-scoped names of its own, and the reconcilers it started."""

    kube: Kube
    ns: str
    real: bool
    suffix: str = field(default_factory=lambda: os.urandom(3).hex())
    _stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    reconcilers: list[Reconciler] = field(default_factory=list)

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    async def start_reconciler(self) -> Reconciler:
        """Production's wiring: informers feeding a fresh cache, and the reconciler's loop, supervised."""
        cache = build_cache()
        supervisor = await self._stack.enter_async_context(Supervisor())
        start_watches(self.kube, cache, supervisor)
        reconciler = Reconciler(self.kube, cache, resync_seconds=0.5)
        supervisor.spawn(reconciler.run(), name="reconciler")
        self.reconcilers.append(reconciler)
        return reconciler

    async def stop_reconcilers(self) -> None:
        await self._stack.aclose()
        self._stack = contextlib.AsyncExitStack()

    async def queues(self, *, cpu: str) -> str:
        """A flavor with a node label, a ClusterQueue of ``cpu`` cores in it, and a LocalQueue; the queue's name."""
        flavor, cq, lq = self.name("pool"), self.name("cq"), "user-queue"
        await self.kube.create(
            r.RESOURCE_FLAVOR,
            {
                "apiVersion": constants.API_VERSION,
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor},
                "spec": {"nodeLabels": {FLAVOR_LABEL: flavor}},
            },
        )
        group = {
            "coveredResources": ["cpu"],
            "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
        }
        await self.kube.create(
            r.CLUSTER_QUEUE,
            {
                "apiVersion": constants.API_VERSION,
                "kind": "ClusterQueue",
                "metadata": {"name": cq},
                "spec": {"namespaceSelector": {}, "resourceGroups": [group]},
            },
        )
        await self.kube.create(
            r.LOCAL_QUEUE,
            {
                "apiVersion": constants.API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": self.ns},
                "spec": {"clusterQueue": cq},
            },
        )
        return lq

    async def job(self, name: str, *, queue: str, pods: int, cpu: str = "1", namespace: str | None = None) -> Object:
        container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": {
                "suspend": True,
                "parallelism": pods,
                "completions": pods,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            },
        }
        return await self.kube.create(r.JOB, body, namespace=namespace or self.ns)

    async def get_job(self, name: str) -> Object:
        return await self.kube.get(r.JOB, name, namespace=self.ns)

    async def workload_of(self, job_name: str) -> Object | None:
        job = await self.get_job(job_name)
        for wl in (await self.kube.list(r.WORKLOAD, namespace=self.ns)).items:
            refs = wl["metadata"].get("ownerReferences") or []
            if any(ref.get("uid") == job["metadata"]["uid"] for ref in refs):
                return wl
        return None

    async def running(self) -> set[str]:
        """Names of the Jobs of this namespace that are not suspended, from the API."""
        jobs = (await self.kube.list(r.JOB, namespace=self.ns)).items
        return {j["metadata"]["name"] for j in jobs if not (j.get("spec") or {}).get("suspend")}

    async def finish(self, job_name: str) -> None:
        """The Job completes: its pods succeed (real: the job controller then completes it; fake: written here)."""
        if not self.real:
            status = {
                "succeeded": (await self.get_job(job_name))["spec"]["parallelism"],
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
                    {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
                ],
            }
            await self.kube.patch_status(r.JOB, job_name, {"status": status}, namespace=self.ns)
            return

        async def pods() -> list[Object]:
            return (await self.kube.list(r.POD, namespace=self.ns, label_selector=f"job-name={job_name}")).items

        expected = (await self.get_job(job_name))["spec"]["parallelism"]
        await eventually(lambda: _count(pods(), expected), what=f"the pods of {job_name}")
        for pod in await pods():
            await self.kube.patch_status(
                r.POD, pod["metadata"]["name"], {"status": {"phase": "Succeeded"}}, namespace=self.ns
            )


async def _count(items: Awaitable[list[Object]], expected: int) -> bool:
    return len(await items) >= expected


@pytest.fixture(params=["fake", "apiserver"])
async def world(request: pytest.FixtureRequest) -> AsyncIterator[World]:
    ns = f"rec-{os.urandom(3).hex()}"
    async with contextlib.AsyncExitStack() as stack:
        kube: Kube
        if request.param == "fake":
            kube = FakeKube()
        else:
            cluster: LocalCluster = request.getfixturevalue("own_cluster")
            kube = await stack.enter_async_context(ApiServerKube(kubeconfig=cluster.kubeconfig))
        await kube.create(r.NAMESPACE, {"metadata": {"name": ns}})
        world = World(kube, ns, real=request.param == "apiserver")
        try:
            yield world
        finally:
            await world.stop_reconcilers()


async def eventually(check: Callable[[], Awaitable[Any]], *, within: float = 30.0, what: str = "condition") -> Any:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = await check()
        if result:
            return result
        assert asyncio.get_running_loop().time() < deadline, f"{what}: not reached in {within}s"
        await asyncio.sleep(0.1)


def condition_true(obj: Object | None, kind: str) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


async def test_a_queued_job_gets_its_workload_is_admitted_and_released_on_its_flavor(world: World) -> None:
    queue = await world.queues(cpu="4")
    await world.job("train", queue=queue, pods=3)
    await world.start_reconciler()

    workload = await eventually(lambda: world.workload_of("train"), what="the Workload")
    (pod_set,) = workload["spec"]["podSets"]
    assert pod_set["count"] == 3
    assert pod_set["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}

    async def admitted() -> Object | None:
        wl = await world.workload_of("train")
        return wl if condition_true(wl, "Admitted") and condition_true(wl, "QuotaReserved") else None

    workload = await eventually(admitted, what="admission")
    assert workload["status"]["admission"]["clusterQueue"] == world.name("cq")
    job = await eventually(lambda: _released(world, "train"), what="the Job released")
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {FLAVOR_LABEL: world.name("pool")}


async def _released(world: World, name: str) -> Object | None:
    job = await world.get_job(name)
    return None if job["spec"].get("suspend") else job


async def test_only_whole_groups_run_and_the_next_one_runs_when_quota_frees(world: World) -> None:
    queue = await world.queues(cpu="4")
    await world.job("first", queue=queue, pods=3)
    await world.start_reconciler()
    await eventually(lambda: _released(world, "first"), what="the first Job released")
    await world.job("second", queue=queue, pods=3)

    async def told_to_wait() -> bool:
        wl = await world.workload_of("second")
        conditions = ((wl or {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions)

    await eventually(told_to_wait, what="the second Workload pending")
    assert await world.running() == {"first"}, "3 + 3 cores do not fit in 4: the second waits whole"

    await world.finish("first")
    await eventually(lambda: _released(world, "second"), what="the second Job released after the first finished")
    first = await world.workload_of("first")
    assert condition_true(first, "Finished")
    assert await world.running() >= {"second"}


async def test_a_new_reconciler_rebuilds_from_the_api_and_admits_nothing_twice(world: World) -> None:
    queue = await world.queues(cpu="4")
    await world.job("first", queue=queue, pods=3)
    first = await world.start_reconciler()
    await eventually(lambda: _released(world, "first"), what="the first Job released")
    admitted = await world.workload_of("first")
    assert admitted is not None
    await world.stop_reconcilers()

    # While no reconciler runs, another job arrives; a fresh one starts from an empty cache.
    await world.job("second", queue=queue, pods=2)
    second = await world.start_reconciler()
    await eventually(lambda: _passes(second, 3), what="three passes of the new reconciler")
    assert first is not second
    assert await world.running() == {"first"}, "2 more cores would exceed 4: the quota already held is known"
    again = await world.workload_of("first")
    assert again is not None
    assert again["status"]["admission"] == admitted["status"]["admission"]


async def _passes(reconciler: Reconciler, count: int) -> bool:
    return reconciler.passes >= count


async def test_a_job_in_an_unmanaged_namespace_is_left_alone(world: World) -> None:
    queue = await world.queues(cpu="4")
    with contextlib.suppress(errors.AlreadyExists):
        await world.kube.create(r.NAMESPACE, {"metadata": {"name": "kube-system"}})
    name = world.name("system-job")
    await world.job(name, queue=queue, pods=1, namespace="kube-system")
    reconciler = await world.start_reconciler()
    await eventually(lambda: _passes(reconciler, 3), what="three passes")
    job = await world.kube.get(r.JOB, name, namespace="kube-system")
    assert job["spec"]["suspend"] is True
    owned = [
        wl
        for wl in (await world.kube.list(r.WORKLOAD, namespace="kube-system")).items
        if any(ref.get("uid") == job["metadata"]["uid"] for ref in wl["metadata"].get("ownerReferences") or [])
    ]
    assert owned == []
    await world.kube.delete(r.JOB, name, namespace="kube-system", propagation_policy="Background")
