"""StatefulSets: the webhook stamps the pod template as one fast-admission pod group sized by ``replicas``, and
holds updates of a queued StatefulSet to Kueue's rules (scale only to and from zero, containers fixed, queue fixed
once admitted)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.admission.builders import NAMESPACE, apply, make_request
from tests.unit.jobs.builders import pod_views
from webhook.admission.options import AdmissionOptions
from webhook.admission.pod_owner_policy import PodOwnerPolicy
from webhook.admission.view import StaticView
from webhook.api import constants as c
from webhook.api.views import ObjectView, Pod
from webhook.jobs import pod_group, statefulset
from webhook.jobs.registry import by_kind

OPTIONS = AdmissionOptions(frameworks=frozenset({"pod", "statefulset"}))
POLICY = PodOwnerPolicy(statefulset.ADAPTER)
GROUP = statefulset.group_name(NAMESPACE, "web")


def make_sts(*, replicas: int | None = 3, queue: str | None = "q", cpu: str = "1", **status: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "serviceName": "web",
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    labels = {c.QUEUE_NAME_LABEL: queue} if queue else {}
    obj = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": NAMESPACE, "labels": labels},
        "spec": spec,
    }
    if status:
        obj["status"] = dict(status)
    return obj


def mutated(obj: dict[str, Any], *, operation: str = "CREATE") -> dict[str, Any]:
    request = make_request(obj, operation=operation, old=obj if operation == "UPDATE" else None)
    verdict = POLICY.mutate(request, StaticView(), OPTIONS)
    assert verdict.allowed
    return apply(obj, verdict)


def refusal(old: dict[str, Any], new: dict[str, Any], *, admitted: bool = False) -> str:
    """The validating webhook's message for ``old`` -> ``new`` ("" when allowed)."""
    view = StaticView(admitted_workloads={(NAMESPACE, GROUP)} if admitted else set())
    verdict = POLICY.validate(make_request(new, operation="UPDATE", old=old), view, OPTIONS)
    return "" if verdict.allowed else verdict.message


def test_the_template_becomes_one_fast_admission_group_of_replicas_pods() -> None:
    template = mutated(make_sts(replicas=3))["spec"]["template"]["metadata"]
    assert template["labels"] == {"app": "web", c.QUEUE_NAME_LABEL: "q", c.POD_GROUP_NAME_LABEL: GROUP}
    assert template["annotations"] == {
        c.POD_GROUP_TOTAL_COUNT_ANNOTATION: "3",
        c.POD_GROUP_FAST_ADMISSION_ANNOTATION: "true",
        c.POD_GROUP_SERVING_ANNOTATION: "true",
    }
    assert "suspend" not in mutated(make_sts())["spec"]  # never suspended: its pods are gated


def test_the_group_size_follows_a_scale_up_from_zero_and_replicas_defaults_to_one() -> None:
    annotations = mutated(make_sts(replicas=5), operation="UPDATE")["spec"]["template"]["metadata"]["annotations"]
    assert annotations[c.POD_GROUP_TOTAL_COUNT_ANNOTATION] == "5"
    annotations = mutated(make_sts(replicas=None))["spec"]["template"]["metadata"]["annotations"]
    assert annotations[c.POD_GROUP_TOTAL_COUNT_ANNOTATION] == "1"


def test_scaled_to_zero_the_group_keeps_its_size_for_a_scale_back_up_through_the_scale_subresource() -> None:
    running = mutated(make_sts(replicas=3))
    paused = mutated(running | {"spec": running["spec"] | {"replicas": 0}}, operation="UPDATE")
    assert paused["spec"]["template"]["metadata"]["annotations"][c.POD_GROUP_TOTAL_COUNT_ANNOTATION] == "3"


def test_created_with_zero_replicas_its_pods_say_one_which_the_pod_webhook_accepts() -> None:
    """The reconciler sizes the group from the live StatefulSet (``kubectl scale`` up goes through /scale); the pods
    need a positive count to be accepted at all."""
    annotations = mutated(make_sts(replicas=0))["spec"]["template"]["metadata"]["annotations"]
    assert annotations[c.POD_GROUP_TOTAL_COUNT_ANNOTATION] == "1"
    assert statefulset.ADAPTER.sizes_group
    assert statefulset.ADAPTER.group_size(ObjectView.of(make_sts(replicas=0))) == 0
    assert statefulset.ADAPTER.group_size(ObjectView.of(make_sts(replicas=None))) == 1


def test_the_group_name_is_a_valid_label_value_even_for_a_long_name() -> None:
    name = statefulset.group_name(NAMESPACE, "w" * 250)
    assert len(name) <= 63
    assert name.startswith("statefulset-www")
    assert name != statefulset.group_name("other", "w" * 250)


def test_an_unqueued_statefulset_is_left_alone() -> None:
    original = make_sts(queue=None)
    assert mutated(original) == original
    assert refusal(original, make_sts(queue=None, replicas=7)) == ""


def test_its_pods_are_the_pod_integrations_not_left_to_the_statefulset() -> None:
    # A Job's pods belong to the Job; a StatefulSet's pods are queued themselves, as one group.
    assert by_kind("apps", "StatefulSet", OPTIONS.frameworks) is statefulset.ADAPTER
    assert not OPTIONS.manages_kind("apps", "StatefulSet")


@pytest.mark.parametrize(
    ("before", "after", "allowed"),
    [
        pytest.param(3, 0, True, id="down-to-zero"),
        pytest.param(0, 4, True, id="up-from-zero"),
        pytest.param(3, 4, False, id="up"),
        pytest.param(3, 1, False, id="down"),
        pytest.param(None, 2, False, id="from-the-default-one"),
    ],
)
def test_replicas_change_only_to_and_from_zero(before: int | None, after: int, allowed: bool) -> None:
    message = refusal(make_sts(replicas=before), make_sts(replicas=after))
    assert (message == "") is allowed, message
    if not allowed:
        assert "spec.replicas" in message


def test_scaling_up_waits_until_the_scale_down_is_over() -> None:
    assert refusal(make_sts(replicas=0), make_sts(replicas=2)) == ""
    old, new = make_sts(replicas=0), make_sts(replicas=2)
    new["status"] = old["status"] = {"replicas": 1}
    assert "scaling down is still in progress" in refusal(old, new)


def test_the_containers_are_fixed_while_managed() -> None:
    assert "spec.template.spec" in refusal(make_sts(cpu="1"), make_sts(cpu="2"))
    relabelled = make_sts()
    relabelled["spec"]["template"]["metadata"]["labels"]["tier"] = "gold"
    assert refusal(make_sts(), relabelled) == ""


@pytest.mark.parametrize(
    ("admitted", "ready", "new_queue", "allowed"),
    [
        pytest.param(False, 0, "other", True, id="pending"),
        pytest.param(True, 0, "other", False, id="admitted"),
        pytest.param(False, 1, "other", False, id="a-pod-ready"),
        pytest.param(False, 0, None, False, id="removed"),
    ],
)
def test_the_queue_is_fixed_once_admitted(admitted: bool, ready: int, new_queue: str | None, allowed: bool) -> None:
    old = make_sts()
    if ready:
        old["status"] = {"readyReplicas": ready}
    new = make_sts(queue=new_queue)
    message = refusal(old, new, admitted=admitted)
    assert (message == "") is allowed, message
    if not allowed:
        assert c.QUEUE_NAME_LABEL in message


def _pod(ordinal: int, sts: dict[str, Any]) -> dict[str, Any]:
    """A pod as the StatefulSet controller makes it from the stamped template (then gated by the pod webhook)."""
    template = copy.deepcopy(mutated(sts)["spec"]["template"])
    template["metadata"] |= {"name": f"web-{ordinal}", "namespace": NAMESPACE, "uid": f"uid-{ordinal}"}
    template["spec"]["schedulingGates"] = [{"name": c.ADMISSION_SCHEDULING_GATE}]
    return {"apiVersion": "v1", "kind": "Pod", **template, "status": {"phase": "Pending"}}


def test_the_first_pod_brings_the_whole_groups_workload() -> None:
    first = _pod(0, make_sts(replicas=3))
    assert pod_group.ready_for_workload(pod_views([first]))
    wl = pod_group.workload_for(pod_views([first]), priority=0)
    assert wl["metadata"]["name"] == GROUP
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [(pod_group.role_hash(Pod.of(first)), 3)]
