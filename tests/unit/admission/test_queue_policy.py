"""Queue objects: the rules a CRD schema cannot express, each refusal naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.admission.builders import apply, make_request
from webhook.admission import queue_policy
from webhook.admission.options import AdmissionOptions
from webhook.admission.verdict import Verdict
from webhook.admission.view import StaticView
from webhook.api import constants as c

OPTIONS = AdmissionOptions()


def quota(name: str, nominal: Any, **limits: Any) -> dict[str, Any]:
    return {"name": name, "nominalQuota": nominal, **limits}


def group(covered: list[str], *flavors: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": [{"name": n, "resources": r} for n, r in flavors]}


def make_cluster_queue(*groups: dict[str, Any], cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"resourceGroups": list(groups), **spec}
    if cohort:
        body["cohort"] = cohort
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": body}


def run(policy: Any, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Verdict:
    operation = "UPDATE" if old is not None else "CREATE"
    verdict: Verdict = policy(make_request(obj, operation=operation, old=old, namespace=""), StaticView(), OPTIONS)
    return verdict


CPU_MEM = ["cpu", "memory"]


@pytest.mark.parametrize(
    ("queue", "fragment"),
    [
        pytest.param(
            make_cluster_queue(group(CPU_MEM, ("default", [quota("memory", "1Gi"), quota("cpu", 4)]))),
            "spec.resourceGroups[0].flavors[0].resources[0].name",
            id="resources-out-of-order",
        ),
        pytest.param(
            make_cluster_queue(group(CPU_MEM, ("default", [quota("cpu", 4)]))),
            "spec.resourceGroups[0].flavors[0].resources: Invalid value: 1",
            id="resource-missing",
        ),
        pytest.param(
            make_cluster_queue(group(["cpu"], ("a", [quota("cpu", 1)])), group(["cpu"], ("b", [quota("cpu", 1)]))),
            "spec.resourceGroups[1].coveredResources[0]: Duplicate value",
            id="resource-in-two-groups",
        ),
        pytest.param(
            make_cluster_queue(group(["cpu"], ("a", [quota("cpu", 1)])), group(["gpu"], ("a", [quota("gpu", 1)]))),
            "spec.resourceGroups[1].flavors[0].name: Duplicate value",
            id="flavor-in-two-groups",
        ),
        pytest.param(
            make_cluster_queue(group(["cpu"], ("a", [quota("cpu", "-1")]))),
            "nominalQuota: Invalid value",
            id="negative-quota",
        ),
        pytest.param(
            make_cluster_queue(group(["cpu"], ("a", [quota("cpu", "lots")]))),
            "resource quantity",
            id="unparsable-quota",
        ),
        pytest.param(
            make_cluster_queue(group(["cpu"], ("a", [quota("cpu", 1, borrowingLimit=2)]))),
            "borrowingLimit: Invalid value: 2: must be unset when cohort is empty",
            id="borrowing-without-cohort",
        ),
        pytest.param(
            make_cluster_queue(group(["cpu"], ("a", [quota("cpu", "1", lendingLimit="2")])), cohort="all"),
            'lendingLimit: Invalid value: "2": must be less than or equal to the nominalQuota',
            id="lending-over-nominal",
        ),
        pytest.param(
            make_cluster_queue(
                preemption={"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}
            ),
            "spec.preemption.borrowWithinCohort.policy",
            id="borrow-preemption-without-reclaim",
        ),
        pytest.param(
            make_cluster_queue(flavorFungibility={"preference": "BorrowingOverPreemption"}),
            "spec.flavorFungibility.preference",
            id="preference-needs-try-next-flavor",
        ),
        pytest.param(
            make_cluster_queue(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "In"}]}),
            "spec.namespaceSelector.matchExpressions[0].values: Required",
            id="bad-namespace-selector",
        ),
        pytest.param(
            make_cluster_queue(
                group(["cpu"], ("a", [quota("cpu", 1)])),
                admissionChecksStrategy={"admissionChecks": [{"name": "p", "onFlavors": ["b"]}]},
            ),
            "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value",
            id="check-on-unknown-flavor",
        ),
    ],
)
def test_bad_cluster_queues_are_refused_naming_the_field(queue: dict[str, Any], fragment: str) -> None:
    verdict = run(queue_policy.validate_cluster_queue, queue)
    assert not verdict.allowed
    assert fragment in verdict.message


def test_good_cluster_queue_with_cohort_limits_is_allowed() -> None:
    queue = make_cluster_queue(
        group(CPU_MEM, ("default", [quota("cpu", "9", lendingLimit="4", borrowingLimit="1"), quota("memory", "36Gi")])),
        group(["nvidia.com/gpu"], ("a100", [quota("nvidia.com/gpu", 8)]), ("t4", [quota("nvidia.com/gpu", 4)])),
        cohort="all",
        namespaceSelector={},
    )
    assert run(queue_policy.validate_cluster_queue, queue).allowed


def test_cluster_queue_and_flavor_get_the_in_use_finalizer_once() -> None:
    queue = make_cluster_queue()
    verdict = run(queue_policy.add_in_use_finalizer, queue)
    once = apply(queue, verdict)
    assert once["metadata"]["finalizers"] == [c.RESOURCE_IN_USE_FINALIZER]
    assert run(queue_policy.add_in_use_finalizer, once).patch == ()


def make_flavor(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": spec}


@pytest.mark.parametrize(
    ("flavor", "fragment"),
    [
        pytest.param(make_flavor(nodeLabels={"bad key!": "x"}), "spec.nodeLabels[bad key!]", id="label-key"),
        pytest.param(
            make_flavor(
                nodeTaints=[
                    {"key": "k", "value": "v", "effect": "NoSchedule"},
                    {"key": "k", "value": "w", "effect": "NoSchedule"},
                ]
            ),
            "spec.nodeTaints[1]",
            id="duplicate-taint",
        ),
        pytest.param(
            make_flavor(nodeTaints=[{"key": "k", "effect": "Sometimes"}]),
            "spec.nodeTaints[0].effect",
            id="taint-effect",
        ),
        pytest.param(
            make_flavor(tolerations=[{"operator": "Equal", "value": "x"}]),
            "spec.tolerations[0].operator",
            id="empty-key-needs-exists",
        ),
        pytest.param(
            make_flavor(
                tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
            ),
            "spec.tolerations[0].effect",
            id="seconds-need-no-execute",
        ),
    ],
)
def test_bad_flavors_are_refused(flavor: dict[str, Any], fragment: str) -> None:
    verdict = run(queue_policy.validate_resource_flavor, flavor)
    assert not verdict.allowed
    assert fragment in verdict.message


def test_flavor_topology_is_fixed_once_set() -> None:
    verdict = run(
        queue_policy.validate_resource_flavor, make_flavor(topologyName="b"), old=make_flavor(topologyName="a")
    )
    assert not verdict.allowed
    assert "spec.topologyName" in verdict.message


def make_local_queue(cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "lq"},
        "spec": {"clusterQueue": cluster_queue},
    }


def test_local_queue_cannot_switch_cluster_queue() -> None:
    verdict = run(queue_policy.validate_local_queue, make_local_queue("b"), old=make_local_queue("a"))
    assert not verdict.allowed
    assert "spec.clusterQueue" in verdict.message


def test_local_queue_needs_a_valid_cluster_queue_name() -> None:
    verdict = run(queue_policy.validate_local_queue, make_local_queue("Not Valid"))
    assert not verdict.allowed
    assert "spec.clusterQueue" in verdict.message


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        pytest.param(1000, True, id="int"),
        pytest.param(2**31, False, id="over-int32"),
        pytest.param("high", False, id="string"),
        pytest.param(None, False, id="missing"),
    ],
)
def test_priority_class_value(value: object, allowed: bool) -> None:
    wpc: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "p"},
    }
    if value is not None:
        wpc["value"] = value
    assert run(queue_policy.validate_priority_class, wpc).allowed is allowed
