"""The Pod integration: groups become one Workload; admission ungates pods and adds the flavor's selector."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.jobs.builders import pod_views
from webhook.api.views import Pod, WorkloadRecord
from webhook.jobs import pod_group
from webhook.jobs.podset import PodSetInfo

JSON = dict[str, Any]


def make_pod(
    name: str, *, group: str = "trio", total: str | None = "3", cpu: str = "1", phase: str = "Pending"
) -> JSON:
    annotations = {"kueue.x-k8s.io/pod-group-total-count": total} if total is not None else {}
    labels = {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/managed": "true"}
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": phase},
    }


def test_a_group_becomes_one_workload_with_a_podset_per_shape() -> None:
    pods = [make_pod("w-0"), make_pod("w-1"), make_pod("chief", cpu="4")]
    wl = pod_group.workload_for(pod_views(pods), priority=5)
    assert wl["metadata"]["name"] == "trio"
    assert wl["metadata"]["annotations"] == {"kueue.x-k8s.io/is-group-workload": "true"}
    assert sorted(o["name"] for o in wl["metadata"]["ownerReferences"]) == ["chief", "w-0", "w-1"]
    assert not any(o.get("controller") for o in wl["metadata"]["ownerReferences"])
    counts = sorted(p["count"] for p in wl["spec"]["podSets"])
    assert counts == [1, 2]
    assert {p["name"] for p in wl["spec"]["podSets"]} == {
        pod_group.role_hash(Pod.of(pods[0])),
        pod_group.role_hash(Pod.of(pods[2])),
    }
    assert all("schedulingGates" not in p["template"]["spec"] for p in wl["spec"]["podSets"])
    assert wl["spec"]["queueName"] == "q"
    assert wl["spec"]["priority"] == 5


def test_a_single_pod_is_a_group_of_one() -> None:
    pod = make_pod("alone", group="", total=None)
    assert pod_group.total_count(pod_views([pod])) == 1
    assert pod_group.workload_name(pod_views([pod])).startswith("pod-alone-")


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        pytest.param(["Succeeded"] * 3, (True, True), id="all-succeeded"),
        pytest.param(["Succeeded", "Failed", "Succeeded"], (True, False), id="one-failed"),
        pytest.param(["Succeeded", "Running", "Succeeded"], (False, False), id="still-running"),
        pytest.param(["Succeeded"] * 2, (False, False), id="incomplete-group"),
    ],
)
def test_finished(phases: list[str], expected: tuple[bool, bool]) -> None:
    pods = [make_pod(f"p{i}", phase=phase) for i, phase in enumerate(phases)]
    assert pod_group.finished(pod_views(pods)) == expected


def test_release_removes_only_our_gate_and_adds_the_flavor() -> None:
    pod = make_pod("w-0")
    pod["spec"]["schedulingGates"].append({"name": "other.io/gate"})
    info = PodSetInfo(
        name="x",
        node_selector={"pool": "a"},
        tolerations=({"key": "spot", "operator": "Exists"},),
        labels={"kueue.x-k8s.io/podset": "x"},
    )
    patch = pod_group.release_patch(Pod.of(pod), info)
    assert patch["spec"] == {
        "schedulingGates": [{"name": "other.io/gate"}],
        "nodeSelector": {"pool": "a"},
        "tolerations": [{"key": "spot", "operator": "Exists"}],
    }
    assert patch["metadata"] == {"labels": {"kueue.x-k8s.io/podset": "x"}}
    assert pod_group.release_patch(Pod.of(make_pod("w-1")), None) == {"spec": {"schedulingGates": None}}


def test_release_refuses_to_override_a_pods_node_selector() -> None:
    pod = make_pod("w-0")
    pod["spec"]["nodeSelector"] = {"pool": "b"}
    with pytest.raises(ValueError, match="pool"):
        pod_group.release_patch(Pod.of(pod), PodSetInfo(name="x", node_selector={"pool": "a"}))


def _fast(pod: JSON) -> JSON:
    pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] = "true"
    return pod


def test_a_group_waits_for_all_its_pods_unless_it_admits_fast() -> None:
    assert not pod_group.ready_for_workload(pod_views([make_pod("w-0"), make_pod("w-1")]))
    assert pod_group.ready_for_workload(pod_views([make_pod(f"w-{i}") for i in range(3)]))
    assert pod_group.ready_for_workload(pod_views([_fast(make_pod("w-0"))]))
    assert not pod_group.ready_for_workload(pod_views([]))


def test_a_fast_group_is_one_podset_of_its_first_pods_shape_for_the_total_count() -> None:
    pods = [_fast(make_pod("w-1")), _fast(make_pod("w-0", cpu="2"))]
    wl = pod_group.workload_for(pod_views(pods), priority=0)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [(pod_group.role_hash(Pod.of(pods[1])), 3)]


def _ungated(pod: JSON) -> JSON:
    pod["spec"]["schedulingGates"] = []
    return pod


def test_release_lets_go_no_more_pods_than_the_podset_counts() -> None:
    first = _fast(make_pod("w-0"))
    wl = pod_group.workload_for(pod_views([first]), priority=0)  # three pods' worth
    pods = [_ungated(_fast(make_pod("w-0"))), *(_fast(make_pod(f"w-{i}")) for i in range(1, 4))]
    # One already runs: two more fit; the fourth (an extra pod with the group's label) stays gated.
    assert [p.name for p in pod_group.releasable(pod_views(pods), WorkloadRecord.of(wl))] == [
        "w-1",
        "w-2",
    ]
    # A pod that ended leaves room for its replacement.
    pods[0]["status"]["phase"] = "Failed"
    assert len(pod_group.releasable(pod_views(pods), WorkloadRecord.of(wl))) == 3


def test_a_pod_of_a_shape_the_workload_does_not_have_is_never_released() -> None:
    wl = pod_group.workload_for(pod_views([_fast(make_pod("w-0"))]), priority=0)
    assert pod_group.releasable(pod_views([_fast(make_pod("w-1", cpu="8"))]), WorkloadRecord.of(wl)) == []


def test_pods_that_came_after_the_workload_are_not_its_owners_yet() -> None:
    first = _fast(make_pod("w-0"))
    wl = pod_group.workload_for(pod_views([first]), priority=0)
    later = _fast(make_pod("w-1"))
    assert [p.raw for p in pod_group.unowned(pod_views([first, later]), WorkloadRecord.of(wl))] == [later]
