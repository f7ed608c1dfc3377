"""Deployments: the webhook copies the queue and priority labels into the pod template, and nothing else."""

from __future__ import annotations

from typing import Any

from tests.unit.admission.builders import NAMESPACE, apply, make_request
from webhook.admission import pod_owner_policy
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView
from webhook.api import constants as c
from webhook.jobs import deployment

OPTIONS = AdmissionOptions(frameworks=frozenset({"pod", "deployment"}))
POLICY = pod_owner_policy.PodOwnerPolicy(deployment.ADAPTER)


def make_deployment(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": NAMESPACE, "labels": dict(labels or {})},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }


def mutated(obj: dict[str, Any], *, view: StaticView | None = None, operation: str = "CREATE") -> dict[str, Any]:
    request = make_request(obj, operation=operation, old=obj if operation == "UPDATE" else None)
    verdict = POLICY.mutate(request, view or StaticView(), OPTIONS)
    assert verdict.allowed
    return apply(obj, verdict)


def test_queue_and_priority_labels_reach_the_pod_template() -> None:
    labels = {c.QUEUE_NAME_LABEL: "q", c.PRIORITY_CLASS_LABEL: "high"}
    result = mutated(make_deployment(labels))
    assert result["spec"]["template"]["metadata"]["labels"] == labels
    assert "suspend" not in result["spec"]  # a Deployment is never suspended: its pods are gated one by one


def test_an_update_keeps_the_template_labelled() -> None:
    result = mutated(make_deployment({c.QUEUE_NAME_LABEL: "q"}), operation="UPDATE")
    assert result["spec"]["template"]["metadata"]["labels"] == {c.QUEUE_NAME_LABEL: "q"}


def test_the_namespace_default_queue_applies_on_creation() -> None:
    view = StaticView(local_queues={(NAMESPACE, c.DEFAULT_LOCAL_QUEUE)})
    result = mutated(make_deployment(), view=view)
    assert result["metadata"]["labels"][c.QUEUE_NAME_LABEL] == c.DEFAULT_LOCAL_QUEUE
    assert result["spec"]["template"]["metadata"]["labels"][c.QUEUE_NAME_LABEL] == c.DEFAULT_LOCAL_QUEUE


def test_an_unqueued_deployment_is_left_alone() -> None:
    original = make_deployment()
    assert mutated(original) == original


def test_a_malformed_queue_name_is_refused() -> None:
    verdict = POLICY.validate(make_request(make_deployment({c.QUEUE_NAME_LABEL: "Not_A_Name"})), StaticView(), OPTIONS)
    assert not verdict.allowed
