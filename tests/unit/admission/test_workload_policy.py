"""Workloads: pod sets well formed, admission consistent with them, fixed while quota is reserved."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.admission.builders import TURNSTILE_USER, make_request
from webhook.admission import workload_policy
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView


def pod_set(name: str = "main", count: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "count": count,
        "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
        **extra,
    }


def condition(kind: str, status: str = "True", reason: str = "Admitted") -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def make_workload(
    *sets: dict[str, Any], reserved: bool = False, admission: dict[str, Any] | None = None, queue: str = "lq"
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if reserved:
        status["conditions"] = [condition("QuotaReserved", reason="QuotaReserved")]
    if admission is not None:
        status["admission"] = admission
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "wl"},
        "spec": {"queueName": queue, "podSets": list(sets) or [pod_set()]},
        "status": status,
    }


def admission(*assignments: dict[str, Any]) -> dict[str, Any]:
    return {"clusterQueue": "cq", "podSetAssignments": list(assignments)}


def assignment(name: str = "main", count: int = 2, cpu: str = "2") -> dict[str, Any]:
    return {"name": name, "count": count, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}}


def check(obj: dict[str, Any], old: dict[str, Any] | None = None) -> str | None:
    operation = "UPDATE" if old is not None else "CREATE"
    verdict = workload_policy.validate(
        make_request(obj, operation=operation, old=old), StaticView(), AdmissionOptions()
    )
    return None if verdict.allowed else verdict.message


@pytest.mark.parametrize(
    ("workload", "fragment"),
    [
        pytest.param(make_workload(reserved=True), "status.admission: Required", id="reserved-without-admission"),
        pytest.param(
            make_workload(reserved=True, admission=admission(assignment("other"))),
            "status.admission.podSetAssignments[0].name: Not found",
            id="assignment-for-unknown-pod-set",
        ),
        pytest.param(
            make_workload(pod_set("a"), pod_set("b"), reserved=True, admission=admission(assignment("a"))),
            "one assignment per pod set",
            id="assignment-missing",
        ),
        pytest.param(
            make_workload(reserved=True, admission=admission(assignment(cpu="3m"))),
            'resourceUsage[cpu]: Invalid value: "3m": is not a multiple of 2',
            id="usage-not-divisible",
        ),
        pytest.param(
            make_workload(pod_set("a", minCount=1), pod_set("b", minCount=1)),
            "at most one pod set",
            id="two-min-counts",
        ),
        pytest.param(make_workload(pod_set(minCount=3)), "spec.podSets[0].minCount", id="min-count-over-count"),
        pytest.param(make_workload(pod_set("Main")), "spec.podSets[0].name", id="pod-set-name"),
        pytest.param(make_workload(pod_set("a"), pod_set("a")), "unique", id="duplicate-pod-set"),
    ],
)
def test_bad_workloads_are_refused(workload: dict[str, Any], fragment: str) -> None:
    message = check(workload)
    assert message is not None
    assert fragment in message


def test_reserved_and_consistent_workload_is_allowed() -> None:
    assert check(make_workload(reserved=True, admission=admission(assignment()))) is None


def test_pod_sets_are_fixed_while_quota_is_reserved() -> None:
    old = make_workload(reserved=True, admission=admission(assignment()))
    new = copy.deepcopy(old)
    new["spec"]["podSets"][0]["count"] = 3
    message = check(new, old)
    assert message is not None
    assert "spec.podSets" in message


def test_queue_is_fixed_while_quota_is_reserved() -> None:
    old = make_workload(reserved=True, admission=admission(assignment()))
    new = copy.deepcopy(old)
    new["spec"]["queueName"] = "elsewhere"
    message = check(new, old)
    assert message is not None
    assert "spec.queueName" in message


def test_queue_may_change_while_pending() -> None:
    assert check(make_workload(queue="b"), make_workload(queue="a")) is None


def test_admission_may_be_set_and_cleared_but_not_edited() -> None:
    pending = make_workload()
    admitted = make_workload(reserved=True, admission=admission(assignment()))
    assert check(admitted, pending) is None
    assert check(pending, admitted) is None
    edited = make_workload(reserved=True, admission=admission(assignment(cpu="4")))
    message = check(edited, admitted)
    assert message is not None
    assert "status.admission" in message


@pytest.mark.parametrize(
    ("user", "allowed"),
    [pytest.param("alice", False, id="a-user-may-not"), pytest.param(TURNSTILE_USER, True, id="turnstile-may")],
)
def test_only_turnstile_sets_the_priority(user: str, allowed: bool) -> None:
    old = make_workload()
    old["spec"]["priority"] = 10
    raised = make_workload()
    raised["spec"]["priority"] = 1000000
    options = AdmissionOptions(trusted_users=frozenset({TURNSTILE_USER}))
    verdict = workload_policy.validate(
        make_request(raised, operation="UPDATE", old=old, user=user), StaticView(), options
    )
    assert verdict.allowed is allowed
    if not allowed:
        assert "spec.priority" in verdict.message


def with_class(workload: dict[str, Any], group: str, kind: str, name: str) -> dict[str, Any]:
    workload = copy.deepcopy(workload)
    workload["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    workload["spec"] |= {"priority": 10, "priorityClassRef": {"group": group, "kind": kind, "name": name}}
    return workload


@pytest.mark.parametrize(
    ("old_class", "new_class", "refused"),
    [
        pytest.param(
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "low"),
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "high"),
            None,
            id="workload-priority-class-name-follows-the-label",
        ),
        pytest.param(
            ("scheduling.k8s.io", "PriorityClass", "low"),
            ("scheduling.k8s.io", "PriorityClass", "high"),
            "spec.priorityClassRef.name",
            id="pod-priority-class-name-fixed",
        ),
        pytest.param(
            ("scheduling.k8s.io", "PriorityClass", "low"),
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "low"),
            "spec.priorityClassRef",
            id="kind-fixed",
        ),
    ],
)
def test_v1beta2_priority_class_while_quota_is_reserved(
    old_class: tuple[str, str, str], new_class: tuple[str, str, str], refused: str | None
) -> None:
    def by_turnstile(new: dict[str, Any], old: dict[str, Any]) -> str | None:  # only Turnstile sets the class
        options = AdmissionOptions(trusted_users=frozenset({TURNSTILE_USER}))
        request = make_request(new, operation="UPDATE", old=old, user=TURNSTILE_USER)
        verdict = workload_policy.validate(request, StaticView(), options)
        return None if verdict.allowed else verdict.message

    reserved = make_workload(reserved=True, admission=admission(assignment()))
    message = by_turnstile(with_class(reserved, *new_class), with_class(reserved, *old_class))
    if refused is None:
        assert message is None
    else:
        assert message is not None
        assert refused in message
    # Pending, anything may change.
    assert by_turnstile(with_class(make_workload(), *new_class), with_class(make_workload(), *old_class)) is None
