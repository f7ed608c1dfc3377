"""The webhook configurations: API server contract, scoped fail-closed, and manifests in step with the code."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.admission import registration
from webhook.admission.endpoints import ENDPOINTS
from webhook.admission.options import BATCH_JOB_FRAMEWORK, POD_FRAMEWORK
from webhook.admission.selector import Selector
from webhook.api.selector import Requirement
from webhook.config import parse_config
from webhook.core.namespace_policy import NamespacePolicy

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests" / "webhook"
DEPLOY_CONFIG = Path(__file__).resolve().parents[3] / "manifests" / "deploy" / "base" / "config.yaml"
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def hooks(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h["name"]: h for h in config["webhooks"]}


def test_url_mode_points_every_webhook_at_the_local_server_with_the_ca() -> None:
    mutating, validating = registration.render_webhook_configurations(ca_bundle=CA, url="https://127.0.0.1:9443")
    for hook in mutating["webhooks"] + validating["webhooks"]:
        assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/")
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == CA
        assert hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert 1 <= hook["timeoutSeconds"] <= 30
        excluded = hook["namespaceSelector"]["matchExpressions"][0]["values"]
        assert {"kube-system", "turnstile-system"} <= set(excluded)
    assert all("patch" not in h for h in validating["webhooks"])


def test_only_queued_jobs_fail_closed_by_default() -> None:
    mutating, _ = registration.render_webhook_configurations(ca_bundle=CA, url="https://127.0.0.1:1")
    by_name = hooks(mutating)
    assert by_name["mjob.turnstile.x-k8s.io"]["failurePolicy"] == "Fail"
    assert by_name["mjob.turnstile.x-k8s.io"]["objectSelector"]["matchExpressions"][0]["operator"] == "Exists"
    assert by_name["mjob-unqueued.turnstile.x-k8s.io"]["failurePolicy"] == "Ignore"


def test_manage_without_queue_name_fails_closed_for_every_job() -> None:
    mutating, _ = registration.render_webhook_configurations(
        ca_bundle=CA, url="https://127.0.0.1:1", manage_jobs_without_queue_name=True
    )
    assert hooks(mutating)["mjob-unqueued.turnstile.x-k8s.io"]["failurePolicy"] == "Fail"


def test_custom_namespace_selector_is_used() -> None:
    chosen = {"matchLabels": {"kueue.openshift.io/managed": "true"}}
    mutating, _ = registration.render_webhook_configurations(
        ca_bundle=CA, url="https://127.0.0.1:1", namespace_selector=chosen
    )
    assert all(h["namespaceSelector"] == chosen for h in mutating["webhooks"])


def test_frameworks_select_the_job_and_pod_webhooks() -> None:
    mutating, _ = registration.render_webhook_configurations(
        ca_bundle=CA, url="https://127.0.0.1:1", frameworks=frozenset({"batch/job"})
    )
    assert not any("pod" in name for name in hooks(mutating))


def test_every_endpoint_path_is_served_by_some_webhook() -> None:
    mutating, validating = registration.render_webhook_configurations(
        ca_bundle=None, url="https://h", frameworks=frozenset({BATCH_JOB_FRAMEWORK, POD_FRAMEWORK})
    )
    urls = {h["clientConfig"]["url"] for h in mutating["webhooks"] + validating["webhooks"]}
    assert urls == {"https://h" + e.path for e in ENDPOINTS}


def test_an_integration_that_is_off_gets_no_webhook() -> None:
    # A pod webhook without the pod integration would be answered by nothing and, failing closed, block the
    # pods of every admitted Job whose template carries the queue label.
    mutating, validating = registration.render_webhook_configurations(ca_bundle=None, url="https://h")
    kinds = {rule["resources"][0] for h in mutating["webhooks"] + validating["webhooks"] for rule in h["rules"]}
    assert "pods" not in kinds
    assert "jobs" in kinds


def test_job_webhooks_select_only_the_managed_namespaces() -> None:
    policy = NamespacePolicy(
        Selector((Requirement("team", "In", frozenset({"ml"})),)), "turnstile-system", "kueue.openshift.io/managed"
    )
    selector = registration.namespace_selector_for(policy)
    mutating, validating = registration.render_webhook_configurations(
        ca_bundle=None, url="https://h", workload_namespace_selector=selector
    )
    for hook in mutating["webhooks"] + validating["webhooks"]:
        if hook["rules"][0]["resources"][0] == "jobs":
            assert hook["namespaceSelector"] == selector
        else:  # queue objects are cluster-wide or Turnstile's own: the default selector
            assert hook["namespaceSelector"] == registration.default_namespace_selector()
    assert {"key": "kueue.openshift.io/managed", "operator": "In", "values": ["true"]} in selector["matchExpressions"]
    assert {"key": "team", "operator": "In", "values": ["ml"]} in selector["matchExpressions"]
    # The selector and the policy agree on every namespace.
    for labels in (
        {"team": "ml", "kueue.openshift.io/managed": "true"},
        {"team": "ml"},
        {"team": "web", "kueue.openshift.io/managed": "true"},
    ):
        named = {"kubernetes.io/metadata.name": "ns"} | labels
        assert policy.is_managed("ns", named) is Selector(
            tuple(
                Requirement(e["key"], e["operator"], frozenset(e.get("values", ())))
                for e in selector["matchExpressions"]
            )
        ).matches(named)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({}, id="neither"),
        pytest.param({"url": "https://h", "service": registration.ServiceRef()}, id="both"),
    ],
)
def test_exactly_one_client_config(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        registration.render_webhook_configurations(ca_bundle=None, **kwargs)


def test_committed_base_manifests_match_the_renderer() -> None:
    # Rendered from the Deployment's configuration: its integrations and its namespace policy.
    config = parse_config(yaml.safe_load((DEPLOY_CONFIG).read_text()))
    committed = list(yaml.safe_load_all((MANIFESTS / "base" / "webhooks.yaml").read_text()))
    rendered = list(
        registration.render_webhook_configurations(
            ca_bundle=None,
            service=registration.ServiceRef(),
            workload_namespace_selector=registration.namespace_selector_for(config.namespace_policy()),
            frameworks=frozenset(config.frameworks),
            manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
        )
    )
    assert committed == rendered
