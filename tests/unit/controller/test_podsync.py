"""Pod groups through the shared state machine, against the in-memory fake: a group's Workload, adoption of pods
that come later, release up to the admitted count, stopping what runs without admission, finishing, PodsReady."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_flavor
from webhook.api import conditions
from webhook.api import constants as c
from webhook.api.views import Pod, WorkloadRecord
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder
from webhook.controller.podsync import PodGroupSync
from webhook.controller.watches import build_cache, resource_of, watch_specs
from webhook.jobs import pod_group, statefulset
from webhook.jobs import workload as wl_life
from webhook.kube import resources as r
from webhook.kube.objects import Object

NOW = datetime(2025, 1, 1, tzinfo=UTC)
FRAMEWORKS = frozenset({"pod", "statefulset"})
STATEFULSET = resource_of(statefulset.ADAPTER)
NS = "team-a"
JSON = dict[str, Any]


def make_pod(name: str, *, group: str = "trio", total: int = 3, fast: bool = False, cpu: str = "1") -> JSON:
    annotations = {c.POD_GROUP_TOTAL_COUNT_ANNOTATION: str(total)}
    if fast:
        annotations[c.POD_GROUP_FAST_ADMISSION_ANNOTATION] = "true"
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {c.QUEUE_NAME_LABEL: "q", c.MANAGED_LABEL: "true", c.POD_GROUP_NAME_LABEL: group},
            "annotations": annotations,
        },
        "spec": {
            "schedulingGates": [{"name": c.ADMISSION_SCHEDULING_GATE}],
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


class World:
    def __init__(self, *, track_pods_ready: bool = False) -> None:
        # No garbage collection: the fake collects a dependent when any owner goes, the real collector only when
        # the last one does (a pod group's Workload is owned by all its pods).
        self.kube = FakeKube(clock=lambda: NOW, garbage_collect=False)
        self.cache: ClusterCache = build_cache(watch_specs(FRAMEWORKS))
        self.sync = PodGroupSync(
            self.kube,
            self.cache,
            events=EventRecorder(self.kube),
            track_pods_ready=track_pods_ready,
            frameworks=FRAMEWORKS,
        )

    async def pass_once(self, now: datetime = NOW) -> None:
        """One reconciler pass over every group, from what the API server holds now."""
        for resource in (r.POD, r.WORKLOAD, r.RESOURCE_FLAVOR, STATEFULSET):
            self.cache.replace(resource, self.kube.objects(resource))
        for group in self.sync.groups():
            await self.sync.sync(group, now)
        for owner in self.sync.scaled_to_zero():
            await self.sync.let_go(owner)

    async def workload(self, name: str = "trio") -> Object:
        return await self.kube.get(r.WORKLOAD, name, namespace=NS)

    async def admit(self, name: str = "trio", *, flavor: str = "spot") -> Object:
        workload = await self.workload(name)
        admission = {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": ps["name"], "count": ps["count"], "flavors": {"cpu": flavor}}
                for ps in workload["spec"]["podSets"]
            ],
        }
        return await self.kube.replace_status(
            r.WORKLOAD, wl_life.admitted(WorkloadRecord.of(workload), admission, now=NOW)
        )

    def pods(self) -> dict[str, Object]:
        return {p["metadata"]["name"]: p for p in self.kube.objects(r.POD)}


def _gated(pod: Object) -> bool:
    return pod_group.is_gated(Pod.of(pod))


async def test_a_complete_group_gets_one_workload_owned_by_every_pod() -> None:
    world = World()
    for i in range(2):
        await world.kube.create(r.POD, make_pod(f"w-{i}"))
    await world.pass_once()
    assert world.kube.objects(r.WORKLOAD) == []  # two of three: the group waits
    await world.kube.create(r.POD, make_pod("w-2"))
    await world.pass_once()
    workload = await world.workload()
    assert {o["name"] for o in workload["metadata"]["ownerReferences"]} == {"w-0", "w-1", "w-2"}
    assert [ps["count"] for ps in workload["spec"]["podSets"]] == [3]


async def test_a_fast_group_is_admitted_before_its_last_pod_exists_which_joins_and_is_released() -> None:
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot", node_labels={"pool": "spot"}))
    await world.kube.create(r.POD, make_pod("w-0", total=2, fast=True))
    await world.pass_once()
    workload = await world.workload()
    assert [ps["count"] for ps in workload["spec"]["podSets"]] == [2]
    await world.admit()
    await world.pass_once()
    first = world.pods()["w-0"]
    assert not _gated(first)
    assert first["spec"]["nodeSelector"] == {"pool": "spot"}
    # The second pod comes later: it is made an owner and released at once (its quota is the group's).
    await world.kube.create(r.POD, make_pod("w-1", total=2, fast=True))
    await world.pass_once()
    assert {o["name"] for o in (await world.workload())["metadata"]["ownerReferences"]} == {"w-0", "w-1"}
    assert not _gated(world.pods()["w-1"])


async def test_release_stops_at_the_admitted_count_and_never_lets_another_shape_go() -> None:
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    await world.kube.create(r.POD, make_pod("w-0", total=2, fast=True))
    await world.pass_once()
    await world.admit()
    for name, cpu in (("w-1", "1"), ("w-2", "1"), ("w-3", "8")):
        await world.kube.create(r.POD, make_pod(name, total=2, fast=True, cpu=cpu))
    await world.pass_once()
    await world.pass_once()
    gated = sorted(name for name, pod in world.pods().items() if _gated(pod))
    assert gated == ["w-2", "w-3"]  # two admitted: w-0 and w-1; w-3 is of a shape the Workload lacks


async def test_a_missing_flavor_fails_the_start_instead_of_releasing_without_it() -> None:
    world = World()
    await world.kube.create(r.POD, make_pod("solo", group="solo", total=1))
    await world.pass_once()
    await world.admit("solo", flavor="gone")
    await world.pass_once()
    assert _gated(world.pods()["solo"])
    finished = conditions.find((await world.workload("solo"))["status"]["conditions"], c.COND_FINISHED)
    assert finished is not None
    assert finished["reason"] == "FailedToStart"


async def test_an_evicted_group_loses_its_running_pods_then_its_quota() -> None:
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    for i in range(2):
        await world.kube.create(r.POD, make_pod(f"w-{i}", total=2))
    await world.pass_once()
    await world.admit()
    await world.pass_once()
    assert not any(_gated(p) for p in world.pods().values())
    workload = await world.workload()
    await world.kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Preempted", message="preempted", now=NOW)
    )
    await world.pass_once()
    assert world.pods() == {}
    assert not WorkloadRecord.of(await world.workload()).holds_quota


async def test_an_evicted_statefulset_group_keeps_its_workload_for_the_pods_made_again() -> None:
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True}
    for i in range(2):
        pod = make_pod(f"web-{i}", total=2, fast=True)
        pod["metadata"]["ownerReferences"] = [sts]
        await world.kube.create(r.POD, pod)
    await world.pass_once()
    await world.admit()
    await world.pass_once()
    workload = await world.workload()
    await world.kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Preempted", message="preempted", now=NOW)
    )
    await world.pass_once()
    assert world.pods() == {}
    # Every pod that owned it is gone: the StatefulSet owns it meanwhile, so the collector leaves it.
    kept = await world.workload()
    assert "sts-uid" in [o["uid"] for o in kept["metadata"]["ownerReferences"]]
    assert not WorkloadRecord.of(kept).holds_quota
    # The StatefulSet makes web-0 again: it joins the Workload, which is its pods' again (scaling to zero
    # collects it), and it stays gated: the Workload waits for quota.
    again = make_pod("web-0", total=2, fast=True)
    again["metadata"]["ownerReferences"] = [sts]
    await world.kube.create(r.POD, again)
    await world.pass_once()
    owners = (await world.workload())["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"]) for o in owners] == [("Pod", "web-0")]
    assert _gated(world.pods()["web-0"])


async def test_an_evicted_groups_quota_stays_while_its_deleted_pods_still_run_on_their_nodes() -> None:
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True}
    pod = make_pod("web-0", total=1, fast=True)
    pod["metadata"] |= {"ownerReferences": [sts], "finalizers": ["example.com/kubelet"]}  # stands for the kubelet
    await world.kube.create(r.POD, pod)
    await world.pass_once()
    await world.admit()
    await world.pass_once()
    running = world.pods()["web-0"]
    await world.kube.replace_status(r.POD, running | {"status": {"phase": "Running"}})
    workload = await world.workload()
    await world.kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Preempted", message="preempted", now=NOW)
    )
    await world.pass_once()
    assert world.pods()["web-0"]["metadata"].get("deletionTimestamp")  # deleted, still stopping
    assert WorkloadRecord.of(await world.workload()).holds_quota
    await world.pass_once()
    assert WorkloadRecord.of(await world.workload()).holds_quota, "quota given back while a pod still runs"
    # Past its grace period it is stuck (a lost node, say): it no longer holds the quota, as in Kueue.
    await world.pass_once(NOW + timedelta(seconds=5))
    assert not WorkloadRecord.of(await world.workload()).holds_quota


async def test_an_evicted_groups_quota_goes_back_once_its_deleted_pods_are_gone() -> None:
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True}
    pod = make_pod("web-0", total=1, fast=True)
    pod["metadata"] |= {"ownerReferences": [sts], "finalizers": ["example.com/kubelet"]}
    await world.kube.create(r.POD, pod)
    await world.pass_once()
    await world.admit()
    await world.pass_once()
    await world.kube.replace_status(r.POD, world.pods()["web-0"] | {"status": {"phase": "Running"}})
    workload = await world.workload()
    await world.kube.replace_status(
        r.WORKLOAD, wl_life.evicted(WorkloadRecord.of(workload), reason="Preempted", message="preempted", now=NOW)
    )
    await world.pass_once()
    assert WorkloadRecord.of(await world.workload()).holds_quota
    # The kubelet has stopped it: the pod goes, the StatefulSet makes it again, gated; the quota goes back.
    await world.kube.patch(r.POD, "web-0", {"metadata": {"finalizers": None}}, namespace=NS)
    assert world.pods() == {}
    again = make_pod("web-0", total=1, fast=True)
    again["metadata"]["ownerReferences"] = [sts]
    await world.kube.create(r.POD, again)
    await world.pass_once()
    assert not WorkloadRecord.of(await world.workload()).holds_quota
    assert _gated(world.pods()["web-0"])


async def test_a_pod_running_without_admission_is_stopped() -> None:
    world = World()
    pod = await world.kube.create(r.POD, make_pod("solo", group="solo", total=1))
    await world.kube.patch(r.POD, "solo", {"spec": {"schedulingGates": None}}, namespace=NS)
    await world.pass_once()  # its Workload is created, pending
    assert await world.workload("solo")
    await world.pass_once()
    assert world.pods() == {}, f"{pod['metadata']['name']} still runs without quota"


async def test_a_group_whose_pods_all_ended_finishes_its_workload() -> None:
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    for i in range(2):
        await world.kube.create(r.POD, make_pod(f"w-{i}", total=2))
    await world.pass_once()
    await world.admit()
    await world.pass_once()
    await world.kube.patch_status(r.POD, "w-0", {"status": {"phase": "Succeeded"}}, namespace=NS)
    await world.kube.patch_status(r.POD, "w-1", {"status": {"phase": "Failed"}}, namespace=NS)
    await world.pass_once()
    finished = conditions.find((await world.workload())["status"]["conditions"], c.COND_FINISHED)
    assert finished is not None
    assert finished["status"] == "True"
    assert finished["message"] == "Some pods failed"


async def test_pods_ready_follows_the_groups_pods_when_tracked() -> None:
    world = World(track_pods_ready=True)
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    for i in range(2):
        await world.kube.create(r.POD, make_pod(f"w-{i}", total=2))
    await world.pass_once()
    await world.admit()
    await world.pass_once()  # released
    ready = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    await world.kube.patch_status(r.POD, "w-0", ready, namespace=NS)
    await world.pass_once()
    assert not conditions.is_true(await world.workload(), c.COND_PODS_READY)
    await world.kube.patch_status(r.POD, "w-1", ready, namespace=NS)
    await world.pass_once()
    assert conditions.is_true(await world.workload(), c.COND_PODS_READY)


# -- a StatefulSet's group: sized and queued by the live StatefulSet (``kubectl scale`` goes through /scale) ------

WEB = statefulset.group_name(NS, "web")


async def make_sts(world: World, *, replicas: int, queue: str = "q") -> Object:
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": NS, "labels": {c.QUEUE_NAME_LABEL: queue}},
        "spec": {"replicas": replicas},
    }
    return await world.kube.create(STATEFULSET, body)


async def admitted_web() -> tuple[World, Object]:
    """A StatefulSet of two pods, both made, its Workload admitted and the pods released."""
    world = World()
    await world.kube.create(r.RESOURCE_FLAVOR, make_flavor("spot"))
    sts = await make_sts(world, replicas=2)
    for i in range(2):
        await sts_pod(world, sts, f"web-{i}", stamped=2)
    await world.pass_once()
    await world.admit(WEB)
    await world.pass_once()
    return world, sts


async def scale(world: World, replicas: int) -> None:
    await world.kube.patch(STATEFULSET, "web", {"spec": {"replicas": replicas}}, namespace=NS)


async def sts_pod(world: World, sts: Object, name: str, *, stamped: int) -> None:
    """A pod as the StatefulSet controller makes it: its template's group, stamped with the size it had then."""
    pod = make_pod(name, group=WEB, total=stamped, fast=True)
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": sts["metadata"]["uid"]}
    pod["metadata"]["ownerReferences"] = [ref | {"controller": True}]
    await world.kube.create(r.POD, pod)


def counts(workload: Object) -> list[int]:
    return [ps["count"] for ps in workload["spec"]["podSets"]]


async def test_a_pending_statefulset_groups_workload_follows_the_live_size_and_queue_not_the_pods_stamp() -> None:
    world = World()
    sts = await make_sts(world, replicas=2)
    await sts_pod(world, sts, "web-0", stamped=1)  # created with 0 replicas, then `kubectl scale`d to 2
    await world.pass_once()
    assert counts(await world.workload(WEB)) == [2]
    await scale(world, 3)
    await world.pass_once()
    assert counts(await world.workload(WEB)) == [3]
    # A new queue (allowed while the group waits) reaches the pods already made and the Workload.
    await world.kube.patch(STATEFULSET, "web", {"metadata": {"labels": {c.QUEUE_NAME_LABEL: "q2"}}}, namespace=NS)
    await world.pass_once()
    assert world.pods()["web-0"]["metadata"]["labels"][c.QUEUE_NAME_LABEL] == "q2"
    await world.pass_once()
    assert (await world.workload(WEB))["spec"]["queueName"] == "q2"
    assert _gated(world.pods()["web-0"])


async def test_an_admitted_statefulset_group_scaled_up_is_stopped_and_queued_again_for_the_new_size() -> None:
    world, sts = await admitted_web()
    assert not any(_gated(p) for p in world.pods().values())
    await scale(world, 3)
    await world.pass_once()
    evicted = await world.workload(WEB)
    found = conditions.find(evicted["status"]["conditions"], c.COND_EVICTED)
    assert found is not None
    assert (found["status"], found["reason"]) == ("True", "Resized")
    assert world.pods() == {}  # pods cannot be resized in place: they go, and the quota with them
    assert not WorkloadRecord.of(evicted).holds_quota
    assert conditions.is_true(evicted, c.COND_REQUEUED)
    assert counts(evicted) == [3]  # in the same pass: the scheduler's turn comes next, it must not see two
    # The StatefulSet makes web-0 again: gated, its Workload pending for three, then admitted for three.
    await sts_pod(world, sts, "web-0", stamped=2)
    await world.pass_once()
    assert counts(await world.workload(WEB)) == [3]
    assert _gated(world.pods()["web-0"])
    await world.admit(WEB)
    await world.pass_once()
    assert not _gated(world.pods()["web-0"])


async def test_scaled_down_while_admitted_then_to_zero_before_its_pods_came_back_the_workload_goes() -> None:
    world, sts = await admitted_web()
    # Scaled down: the StatefulSet deletes web-1; the group is queued again for one (its quota for two goes back).
    await scale(world, 1)
    await world.kube.delete(r.POD, "web-1", namespace=NS)
    await world.pass_once()
    kept = await world.workload(WEB)
    assert not WorkloadRecord.of(kept).holds_quota
    assert world.pods() == {}
    assert sts["metadata"]["uid"] in [o["uid"] for o in kept["metadata"]["ownerReferences"]]
    # Scaled to zero before web-0 is made again: no pod will come, so the Workload the StatefulSet kept goes.
    await scale(world, 0)
    await world.pass_once()
    assert world.kube.objects(r.WORKLOAD) == []


async def test_a_statefulset_scaled_down_while_pending_waits_for_the_smaller_size() -> None:
    world = World()
    sts = await make_sts(world, replicas=3)
    await sts_pod(world, sts, "web-0", stamped=3)
    await world.pass_once()
    await scale(world, 1)
    await world.pass_once()
    assert counts(await world.workload(WEB)) == [1]
    await scale(world, 0)  # its pods are still there (the StatefulSet is deleting them): nothing changes yet
    await world.pass_once()
    assert counts(await world.workload(WEB)) == [1]
