"""Parsing Kueue objects: both API versions give the same values; malformed fields are named."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from webhook.api import constants
from webhook.api.clusterqueue import MAY_STOP_SEARCH, STRICT_FIFO, TRY_NEXT_FLAVOR, parse_cluster_queue
from webhook.api.flavor import Taint, Toleration, parse_resource_flavor
from webhook.api.localqueue import parse_local_queue
from webhook.api.priorityclass import parse_workload_priority_class
from webhook.api.quantity import parse_quantity
from webhook.api.selector import matches
from webhook.api.wire import InvalidObject
from webhook.api.workload import PriorityClassRef, parse_workload


def cq_v1beta1(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cohort": "research",
        "queueingStrategy": "StrictFIFO",
        "namespaceSelector": {"matchLabels": {"team": "ml"}},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "a100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "64", "borrowingLimit": "16", "lendingLimit": "8"},
                            {"name": "nvidia.com/gpu", "nominalQuota": 8},
                        ],
                    }
                ],
            }
        ],
        "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        "preemption": {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
        },
    }
    base.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "gpus"}, "spec": base}


def test_cluster_queue_fields() -> None:
    cq = parse_cluster_queue(cq_v1beta1())
    assert cq.name == "gpus"
    assert cq.cohort == "research"
    assert cq.queueing_strategy == STRICT_FIFO
    flavor = cq.resource_groups[0].flavors[0]
    cpu, gpu = flavor.resources
    assert (cpu.nominal, cpu.borrowing_limit, cpu.lending_limit) == (
        parse_quantity(64),
        parse_quantity(16),
        parse_quantity(8),
    )
    assert (gpu.nominal, gpu.borrowing_limit, gpu.lending_limit) == (parse_quantity(8), None, None)
    assert cq.preemption.borrow_max_priority_threshold == 100
    assert cq.namespace_selector is not None
    assert matches(cq.namespace_selector, {"team": "ml"})
    # The deprecated v1beta1 aliases mean MayStopSearch.
    assert cq.flavor_fungibility.when_can_borrow == MAY_STOP_SEARCH
    assert cq.flavor_fungibility.when_can_preempt == MAY_STOP_SEARCH


def test_cluster_queue_v1beta2_parses_to_the_same_value() -> None:
    v2 = copy.deepcopy(cq_v1beta1())
    v2["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    v2["spec"]["cohortName"] = v2["spec"].pop("cohort")
    v2["spec"]["flavorFungibility"] = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
    assert parse_cluster_queue(v2) == parse_cluster_queue(cq_v1beta1())


def test_cluster_queue_defaults() -> None:
    cq = parse_cluster_queue({"metadata": {"name": "x"}, "spec": {}})
    assert cq.namespace_selector is None  # nil selector: no namespace may use it
    assert cq.flavor_fungibility.when_can_preempt == TRY_NEXT_FLAVOR
    assert cq.cohort is None
    assert cq.active


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        pytest.param({"queueingStrategy": "Random"}, "spec.queueingStrategy", id="bad-strategy"),
        pytest.param(
            {"preemption": {"withinClusterQueue": "Always"}}, "spec.preemption.withinClusterQueue", id="bad-policy"
        ),
        pytest.param({"stopPolicy": "Pause"}, "spec.stopPolicy", id="bad-stop-policy"),
        pytest.param({"queueingStrategy": 3}, "spec.queueingStrategy", id="enum-not-a-string"),
        pytest.param(
            {"flavorFungibility": {"whenCanBorrow": "Sometimes"}},
            "spec.flavorFungibility.whenCanBorrow",
            id="bad-fungibility",
        ),
        pytest.param(
            {"preemption": {"borrowWithinCohort": {"policy": "Any"}}},
            "spec.preemption.borrowWithinCohort.policy",
            id="bad-borrow-within-cohort",
        ),
        pytest.param(
            {
                "resourceGroups": [
                    {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu"}]}]}
                ]
            },
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
            id="missing-nominal",
        ),
    ],
)
def test_cluster_queue_errors_name_the_field(spec: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidObject) as err:
        parse_cluster_queue({"metadata": {"name": "x"}, "spec": spec})
    assert err.value.path == path


def workload_obj(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "queueName": "main",
        "priority": 100,
        "podSets": [
            {
                "name": "workers",
                "count": 4,
                "minCount": 2,
                "template": {
                    "spec": {
                        "containers": [{"name": "w", "resources": {"requests": {"cpu": "8", "memory": "16Gi"}}}],
                        "nodeSelector": {"pool": "gpu"},
                        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    }
                },
            }
        ],
    }
    base.update(spec)
    return {
        "metadata": {"name": "job-a", "namespace": "ml", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": base,
        "status": {
            "admission": {
                "clusterQueue": "gpus",
                "podSetAssignments": [
                    {"name": "workers", "flavors": {"cpu": "a100"}, "resourceUsage": {"cpu": "32"}, "count": 4}
                ],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "lastTransitionTime": "2026-01-01T00:01:00Z",
                }
            ],
        },
    }


def test_workload_fields() -> None:
    wl = parse_workload(
        workload_obj(priorityClassName="high", priorityClassSource=constants.WORKLOAD_PRIORITY_CLASS_SOURCE)
    )
    (ps,) = wl.pod_sets
    assert (ps.name, ps.count, ps.min_count) == ("workers", 4, 2)
    assert ps.requests == {"cpu": parse_quantity(8), "memory": parse_quantity("16Gi")}
    assert ps.node_selector == {"pool": "gpu"}
    assert ps.tolerations == (Toleration("gpu", "Exists", "", "NoSchedule"),)
    assert wl.priority == 100
    assert wl.active
    assert wl.holds_quota
    assert not wl.pending
    assert wl.admission is not None
    assert wl.admission.pod_set_assignments[0].resource_usage == {"cpu": parse_quantity(32)}
    assert wl.priority_class == PriorityClassRef(constants.WORKLOAD_PRIORITY_CLASS_SOURCE, "high")
    assert wl.quota_reserved_at.minute == 1


def test_workload_v1beta2_priority_class_ref_parses_to_the_same_value() -> None:
    v1 = parse_workload(
        workload_obj(priorityClassName="high", priorityClassSource=constants.WORKLOAD_PRIORITY_CLASS_SOURCE)
    )
    v2 = parse_workload(
        workload_obj(priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"})
    )
    assert v1 == v2


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        pytest.param({"podSets": []}, "spec.podSets", id="no-pod-sets"),
        pytest.param(
            {"podSets": [{"count": 2, "minCount": 3, "template": {}}]}, "spec.podSets[0].minCount", id="min-above-count"
        ),
        pytest.param({"priority": "high"}, "spec.priority", id="priority-not-int"),
        pytest.param(
            {"priorityClassRef": {"group": "example.com", "name": "x"}},
            "spec.priorityClassRef.group",
            id="unknown-group",
        ),
    ],
)
def test_workload_errors_name_the_field(spec: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidObject) as err:
        parse_workload(workload_obj(**spec))
    assert err.value.path == path


def test_local_queue_and_priority_class_and_flavor() -> None:
    lq = parse_local_queue({"metadata": {"name": "main", "namespace": "ml"}, "spec": {"clusterQueue": "gpus"}})
    assert (lq.namespace, lq.name, lq.cluster_queue, lq.active) == ("ml", "main", "gpus", True)
    wpc = parse_workload_priority_class({"metadata": {"name": "high"}, "value": 1000, "description": "urgent"})
    assert (wpc.name, wpc.value) == ("high", 1000)
    rf = parse_resource_flavor(
        {
            "metadata": {"name": "a100"},
            "spec": {
                "nodeLabels": {"gpu": "a100"},
                "nodeTaints": [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}],
            },
        }
    )
    assert rf.node_taints == (Taint("gpu", "NoSchedule", "a100"),)
    with pytest.raises(InvalidObject):
        parse_workload_priority_class({"metadata": {"name": "x"}, "value": 2**31})


@pytest.mark.parametrize(
    ("selector", "tolerations", "eligible"),
    [
        pytest.param({}, (), False, id="untolerated-taint"),
        pytest.param({}, (Toleration("gpu", "Exists"),), True, id="tolerated-by-pod"),
        pytest.param({}, (Toleration("gpu", "Equal", "h100", "NoSchedule"),), False, id="toleration-wrong-value"),
        pytest.param({"gpu": "h100"}, (Toleration("gpu", "Exists"),), False, id="selector-conflicts-with-flavor-label"),
        pytest.param({"zone": "a"}, (Toleration("", "Exists"),), True, id="selector-key-unknown-to-flavor-ignored"),
    ],
)
def test_flavor_eligibility(selector: dict[str, str], tolerations: tuple[Toleration, ...], eligible: bool) -> None:
    rf = parse_resource_flavor(
        {
            "metadata": {"name": "a100"},
            "spec": {
                "nodeLabels": {"gpu": "a100"},
                "nodeTaints": [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}],
            },
        }
    )
    assert (rf.admits(selector, tolerations) is None) is eligible


def test_an_enum_outside_the_schema_is_named_with_what_it_may_be() -> None:
    with pytest.raises(InvalidObject, match=r"spec.stopPolicy: 'Pause' is not one of None, Hold, HoldAndDrain"):
        parse_cluster_queue({"metadata": {"name": "x"}, "spec": {"stopPolicy": "Pause"}})


def test_a_timestamp_without_a_zone_is_read_as_utc_and_a_malformed_one_is_named() -> None:
    obj = workload_obj()
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00"
    assert parse_workload(obj).created == datetime(2026, 1, 1, tzinfo=UTC)
    obj["metadata"]["creationTimestamp"] = "yesterday"
    with pytest.raises(InvalidObject, match="not an RFC 3339 time: 'yesterday'") as err:
        parse_workload(obj)
    assert err.value.path == "metadata.creationTimestamp"
