"""The Ray adapters: Kueue's pod sets for RayJob and RayCluster, autoscaling refused, finished and ready."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.views import ObjectView, WorkloadRecord
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo
from webhook.jobs.ray import RAYCLUSTER, RAYJOB

JSON = dict[str, Any]


def _pod(cpu: str = "1") -> JSON:
    return {"spec": {"containers": [{"name": "ray", "image": "ray:2", "resources": {"requests": {"cpu": cpu}}}]}}


def cluster_spec(*groups: tuple[str, int | None, int | None], autoscaling: bool | None = None) -> JSON:
    """``groups``: (groupName, replicas, numOfHosts)."""
    spec: JSON = {"headGroupSpec": {"template": _pod()}, "workerGroupSpecs": []}
    for name, replicas, hosts in groups:
        group: JSON = {"groupName": name, "template": _pod("2"), "minReplicas": 0, "maxReplicas": 8}
        if replicas is not None:
            group["replicas"] = replicas
        if hosts is not None:
            group["numOfHosts"] = hosts
        spec["workerGroupSpecs"].append(group)
    if autoscaling is not None:
        spec["enableInTreeAutoscaling"] = autoscaling
    return spec


def rayjob(spec: JSON, **extra: Any) -> JSON:
    return {"metadata": {"name": "rj", "namespace": "ns", "uid": "u"}, "spec": {"rayClusterSpec": spec} | extra}


def raycluster(spec: JSON) -> JSON:
    return {"metadata": {"name": "rc", "namespace": "ns", "uid": "u"}, "spec": spec}


def _counts(pod_sets: list[JSON]) -> dict[str, int]:
    return {p["name"]: p["count"] for p in pod_sets}


def test_a_rayclusters_pod_sets_are_its_head_and_worker_groups() -> None:
    spec = cluster_spec(("GPU-Workers", 3, None), ("tpu", 2, 4), ("one", None, None))
    assert _counts(RAYCLUSTER.pod_sets(ObjectView.of(raycluster(spec)), PodDefaults())) == {
        "head": 1,
        "gpu-workers": 3,  # lower case, as Kueue names it
        "tpu": 8,  # replicas x numOfHosts
        "one": 1,  # replicas default to 1
    }


def test_a_rayjob_submitted_as_a_kubernetes_job_has_a_submitter_pod_set() -> None:
    job = rayjob(cluster_spec(("w", 1, None)))
    pod_sets = RAYJOB.pod_sets(ObjectView.of(job), PodDefaults())
    assert _counts(pod_sets) == {"head": 1, "w": 1, "submitter": 1}
    # Without a submitterPodTemplate, KubeRay's default submitter: what it asks for is what is charged.
    submitter = pod_sets[-1]["template"]["spec"]["containers"][0]
    assert submitter["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}
    http = rayjob(cluster_spec(("w", 1, None)), submissionMode="HTTPMode")
    assert _counts(RAYJOB.pod_sets(ObjectView.of(http), PodDefaults())) == {"head": 1, "w": 1}


def test_release_and_restore_cover_every_group() -> None:
    job = raycluster(cluster_spec(("w", 2, None)))
    workload = {"spec": {"podSets": RAYCLUSTER.pod_sets(ObjectView.of(job), PodDefaults())}}
    infos = {n: PodSetInfo(name=n, node_selector={"pool": n}) for n in ("head", "w")}
    running = RAYCLUSTER.released(
        ObjectView.of(job | {"spec": job["spec"] | {"suspend": True}}), infos, {"head": 1, "w": 2}
    )
    assert running["spec"]["suspend"] is False
    assert running["spec"]["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "head"}
    assert running["spec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == {"pool": "w"}
    back = RAYCLUSTER.restored(ObjectView.of(RAYCLUSTER.suspended(ObjectView.of(running))), WorkloadRecord.of(workload))
    assert "nodeSelector" not in back["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert "nodeSelector" not in back["spec"]["headGroupSpec"]["template"]["spec"]


@pytest.mark.parametrize("adapter", [RAYJOB, RAYCLUSTER], ids=["rayjob", "raycluster"])
def test_autoscaling_is_refused_only_for_managed_ones(adapter: Any) -> None:
    spec = cluster_spec(("w", 1, None), autoscaling=True)
    obj = rayjob(spec) if adapter is RAYJOB else raycluster(spec)
    [problem] = adapter.create_problems(ObjectView.of(obj), managed=True)
    assert problem.path.endswith("enableInTreeAutoscaling")
    assert "autoscaling" in problem.message
    assert adapter.create_problems(ObjectView.of(obj), managed=False) == []


def test_a_rayjob_may_not_use_an_existing_cluster_or_reserved_group_names() -> None:
    selector = rayjob(cluster_spec(("w", 1, None)), clusterSelector={"ray.io/cluster": "shared"})
    assert [p.path for p in RAYJOB.create_problems(ObjectView.of(selector), managed=True)] == ["spec.clusterSelector"]
    reserved = rayjob(cluster_spec(("Submitter", 1, None)))
    assert [p.path for p in RAYJOB.create_problems(ObjectView.of(reserved), managed=True)] == [
        "spec.rayClusterSpec.workerGroupSpecs"
    ]


@pytest.mark.parametrize(
    ("status", "done", "succeeded"),
    [
        pytest.param({}, False, False, id="new"),
        pytest.param({"jobDeploymentStatus": "Running"}, False, False, id="running"),
        pytest.param({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, True, True, id="succeeded"),
        pytest.param({"jobDeploymentStatus": "Complete", "jobStatus": "FAILED"}, True, False, id="job-failed"),
        pytest.param({"jobDeploymentStatus": "Failed"}, True, False, id="deployment-failed"),
    ],
)
def test_a_rayjob_finishes_as_kuberay_reports(status: JSON, done: bool, succeeded: bool) -> None:
    finish = RAYJOB.finished(ObjectView.of(rayjob(cluster_spec()) | {"status": status}))
    assert (finish.done, finish.succeeded) == (done, succeeded)


def test_a_raycluster_never_finishes_and_is_ready_when_kuberay_says_so() -> None:
    ready = raycluster(cluster_spec()) | {"status": {"state": "ready"}}
    assert not RAYCLUSTER.finished(ObjectView.of(ready)).done
    assert RAYCLUSTER.pods_ready(ObjectView.of(ready))
    assert not RAYCLUSTER.pods_ready(ObjectView.of(raycluster(cluster_spec())))
