"""ChangeRouter: which jobs, pod groups and Workloads one change in the cache makes a pass look at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.unit.jobs.builders import make_job
from webhook.api import constants
from webhook.api.views import ObjectView
from webhook.controller.cache import ClusterCache
from webhook.controller.changes import ChangeRouter
from webhook.controller.watches import build_cache, resource_of, watch_specs
from webhook.jobs import batch_job, statefulset, suspendable
from webhook.kube import resources as r
from webhook.kube.objects import ObjectKey

NOW = datetime(2025, 1, 1, tzinfo=UTC)
NS = "team-a"


def router_for(cache: ClusterCache) -> ChangeRouter:
    router = ChangeRouter(
        cache, job_kinds={r.JOB: batch_job.ADAPTER.kind}, frameworks=frozenset({"batch/job", "pod"}), pod_groups=True
    )
    router.add_all()
    drain(router)  # forget the first pass's "everything"
    return router


def drain(router: ChangeRouter) -> tuple[set[ObjectKey], set[ObjectKey], set[ObjectKey], bool]:
    """What the next pass would look at: (jobs, pod groups, Workloads, whether anything is a full pass)."""
    jobs, groups, workloads = router.jobs[r.JOB].take(NOW), router.groups.take(NOW), router.workloads.take(NOW)
    return jobs[1], groups[1], workloads[1], jobs[0] or groups[0] or workloads[0]


def versioned(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    return obj | {"metadata": obj["metadata"] | {"resourceVersion": str(rv)}}


def workload(name: str, *, owner: dict[str, Any] | None = None, rv: int = 1) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "resourceVersion": str(rv)}
    if owner is not None:
        ref = {"apiVersion": "batch/v1", "kind": "Job", "name": owner["metadata"]["name"], "controller": True}
        meta["ownerReferences"] = [ref | {"uid": owner["metadata"]["uid"]}]
    return {"apiVersion": constants.API_VERSION, "kind": "Workload", "metadata": meta, "spec": {}}


def pod(name: str, *, group: str, rv: int = 1) -> dict[str, Any]:
    labels = {constants.POD_GROUP_NAME_LABEL: group, constants.MANAGED_LABEL: "true"}
    return {"metadata": {"name": name, "namespace": NS, "labels": labels, "resourceVersion": str(rv)}}


def job_workload(job: dict[str, Any]) -> str:
    return suspendable.job_workload_name(ObjectView.of(job), batch_job.ADAPTER.kind)


def test_a_workload_change_marks_itself_and_the_job_of_its_name_even_once_deleted() -> None:
    cache = build_cache()
    job = versioned(make_job("train", namespace=NS, uid="u1"), 1)
    other = versioned(make_job("other", namespace=NS, uid="u2"), 1)
    cache.replace(r.JOB, [job, other])
    router = router_for(cache)

    created = workload(job_workload(job), owner=job, rv=2)
    cache.apply(r.WORKLOAD, "ADDED", created)
    key = ObjectKey(NS, job_workload(job))
    assert drain(router) == ({ObjectKey(NS, "train")}, set(), {key}, False)

    cache.apply(r.WORKLOAD, "DELETED", created)
    assert drain(router) == ({ObjectKey(NS, "train")}, set(), {key}, False), "its Job must make a new one"


def test_a_job_change_marks_the_job_and_the_workloads_it_owns_also_when_deleted() -> None:
    cache = build_cache()
    job = versioned(make_job("train", namespace=NS, uid="u1"), 1)
    cache.replace(r.JOB, [job])
    cache.replace(r.WORKLOAD, [workload(job_workload(job), owner=job)])
    router = router_for(cache)

    cache.apply(r.JOB, "MODIFIED", versioned(job, 3))
    owned = {ObjectKey(NS, job_workload(job))}
    assert drain(router) == ({ObjectKey(NS, "train")}, set(), owned, False)
    cache.apply(r.JOB, "DELETED", versioned(job, 3))
    assert drain(router) == ({ObjectKey(NS, "train")}, set(), owned, False), "an orphan now: step 2 deletes it"


def test_a_prebuilt_workload_marks_the_job_that_names_it() -> None:
    cache = build_cache()
    job = versioned(make_job("train", namespace=NS, labels={constants.PREBUILT_WORKLOAD_LABEL: "mine"}), 1)
    cache.replace(r.JOB, [job])
    router = router_for(cache)  # the Job was in the cache before the router: it is indexed too

    cache.apply(r.WORKLOAD, "ADDED", workload("mine"))
    assert drain(router)[0] == {ObjectKey(NS, "train")}


def test_a_pod_marks_its_group_and_the_group_sees_its_workload_change() -> None:
    cache = build_cache()
    router = router_for(cache)
    cache.apply(r.POD, "ADDED", pod("p-0", group="trio"))
    cache.apply(r.POD, "ADDED", pod("p-1", group="trio"))
    assert drain(router)[1] == {ObjectKey(NS, "trio")}
    assert [p.name for p in router.group_pods(ObjectKey(NS, "trio"))] == ["p-0", "p-1"]

    cache.apply(r.WORKLOAD, "ADDED", workload("trio"))
    assert drain(router)[1] == {ObjectKey(NS, "trio")}
    cache.apply(r.POD, "DELETED", pod("p-0", group="trio"))
    assert drain(router)[1] == {ObjectKey(NS, "trio")}
    assert [p.name for p in router.group_pods(ObjectKey(NS, "trio"))] == ["p-1"]


def test_a_queue_change_marks_everything_and_a_quiet_one_nothing() -> None:
    cache = build_cache()
    router = router_for(cache)
    queue = {"metadata": {"name": "cq", "resourceVersion": "1"}, "spec": {}}
    cache.observe(r.CLUSTER_QUEUE, queue, quiet=True)  # a status we wrote ourselves
    cache.observe(r.WORKLOAD, workload("pending", rv=2), quiet=True)  # a pending reason
    assert drain(router) == (set(), set(), set(), False)

    cache.apply(r.CLUSTER_QUEUE, "MODIFIED", versioned(queue, 5))
    assert drain(router)[3] is True


def test_a_statefulset_change_marks_the_group_it_sizes_and_the_workload_it_keeps() -> None:
    frameworks = frozenset({"batch/job", "pod", "statefulset"})
    cache = build_cache(watch_specs(frameworks))
    sts_resource = resource_of(statefulset.ADAPTER)
    router = ChangeRouter(
        cache,
        job_kinds={r.JOB: batch_job.ADAPTER.kind},
        frameworks=frameworks,
        pod_groups=True,
        group_owners={sts_resource: statefulset.ADAPTER},
    )
    router.add_all()
    drain(router)
    group = statefulset.group_name(NS, "web")
    sts = {"metadata": {"name": "web", "namespace": NS, "uid": "s1", "resourceVersion": "1"}, "spec": {"replicas": 2}}
    kept = workload(group)
    kept["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s1"}]
    cache.apply(r.WORKLOAD, "ADDED", kept)
    drain(router)

    cache.apply(sts_resource, "ADDED", sts)
    # `kubectl scale` goes through /scale: no pod changes, only the StatefulSet; its group must be looked at again.
    cache.apply(sts_resource, "MODIFIED", versioned(sts | {"spec": {"replicas": 3}}, 2))
    assert drain(router) == (set(), {ObjectKey(NS, group)}, {ObjectKey(NS, group)}, False)


def test_the_next_retry_is_the_first_one_owed_by_any_kind_of_work() -> None:
    router = router_for(build_cache())
    assert router.next_retry() is None
    router.workloads.failed(ObjectKey(NS, "w"), NOW)  # retried after 0.1 s
    router.jobs[r.JOB].failed(ObjectKey(NS, "j"), NOW)
    router.jobs[r.JOB].failed(ObjectKey(NS, "j"), NOW)  # failed twice in a row: after 0.2 s
    router.groups.failed(ObjectKey(NS, "g"), NOW - timedelta(seconds=1))
    assert router.next_retry() == NOW - timedelta(seconds=0.9)
