"""Plain pods and pod groups: managed pods are gated and labelled; the gate stays until admission."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.admission.builders import NAMESPACE, TURNSTILE_USER, apply, make_pod, make_request
from webhook.admission import pod_policy
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView
from webhook.api import constants as c
from webhook.jobs import naming

OPTIONS = AdmissionOptions(frameworks=frozenset({"batch/job", "pod"}), trusted_users=frozenset({TURNSTILE_USER}))
GATE = {"name": c.ADMISSION_SCHEDULING_GATE}


def mutated(
    pod: dict[str, Any], *, options: AdmissionOptions = OPTIONS, view: StaticView | None = None
) -> dict[str, Any]:
    verdict = pod_policy.mutate(make_request(pod), view or StaticView(), options)
    assert verdict.allowed
    return apply(pod, verdict)


def test_managed_pod_is_gated_labelled_and_stamped() -> None:
    pod = mutated(make_pod())
    assert pod["spec"]["schedulingGates"] == [GATE]
    assert pod["metadata"]["labels"][c.MANAGED_LABEL] == "true"
    assert pod["metadata"]["annotations"][c.WORKLOAD_NAME_ANNOTATION] == naming.pod_workload_name(NAMESPACE, "p-0", "")


def test_group_members_share_the_group_workload() -> None:
    names = {
        mutated(make_pod(f"p-{i}", group="train", total="3"))["metadata"]["annotations"][c.WORKLOAD_NAME_ANNOTATION]
        for i in range(3)
    }
    assert names == {"train"}


def test_pod_integration_off_leaves_pods_alone() -> None:
    pod = make_pod()
    assert mutated(pod, options=AdmissionOptions()) == pod


def test_pods_of_a_managed_job_are_left_to_the_job() -> None:
    pod = make_pod(owner_kind="Job")
    assert mutated(pod) == pod


def test_unlabelled_pod_is_untouched() -> None:
    pod = make_pod(queue=None)
    assert mutated(pod) == pod


def test_reinvocation_yields_an_empty_patch() -> None:
    once = mutated(make_pod(group="g", total="2"))
    assert pod_policy.mutate(make_request(once), StaticView(), OPTIONS).patch == ()


def validate(
    pod: dict[str, Any], *, old: dict[str, Any] | None = None, user: str = "alice", view: StaticView | None = None
) -> str | None:
    operation = "UPDATE" if old is not None else "CREATE"
    verdict = pod_policy.validate(
        make_request(pod, operation=operation, old=old, user=user), view or StaticView(), OPTIONS
    )
    return None if verdict.allowed else verdict.message


@pytest.mark.parametrize(
    ("pod", "fragment"),
    [
        pytest.param(make_pod(group="g"), "kueue.x-k8s.io/pod-group-total-count]: Required", id="name-without-count"),
        pytest.param(make_pod(total="3"), "kueue.x-k8s.io/pod-group-name]: Required", id="count-without-name"),
        pytest.param(make_pod(group="g", total="0"), "positive whole number", id="zero-count"),
        pytest.param(make_pod(group="g", total="-2"), "positive whole number", id="negative-count"),
        pytest.param(make_pod(group="g", total="three"), "positive whole number", id="count-not-a-number"),
        pytest.param(make_pod(group="G!", total="3"), "RFC 1123", id="bad-group-name"),
    ],
)
def test_incomplete_or_bad_group_definitions_are_refused(pod: dict[str, Any], fragment: str) -> None:
    message = validate(pod)
    assert message is not None
    assert fragment in message


def test_complete_group_is_allowed() -> None:
    assert validate(make_pod(group="g", total="3")) is None


def test_group_name_cannot_change() -> None:
    old = make_pod(group="g", total="3", managed=True, gated=True)
    message = validate(make_pod(group="h", total="3", managed=True, gated=True), old=old)
    assert message is not None
    assert "cannot leave or change its group" in message


def test_removing_the_gate_by_hand_is_refused() -> None:
    old = make_pod(group="g", total="3", managed=True, gated=True)
    message = validate(make_pod(group="g", total="3", managed=True, gated=False), old=old)
    assert message is not None
    assert "spec.schedulingGates: Forbidden" in message
    assert "'g'" in message


def test_turnstile_removes_the_gate() -> None:
    old = make_pod(managed=True, gated=True)
    assert validate(make_pod(managed=True), old=old, user=TURNSTILE_USER) is None


def test_gate_may_go_once_the_workload_is_admitted() -> None:
    old = make_pod(group="g", total="3", managed=True, gated=True)
    view = StaticView(admitted_workloads={(NAMESPACE, "g")})
    assert validate(make_pod(group="g", total="3", managed=True), old=old, view=view) is None
