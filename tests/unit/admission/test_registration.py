"""The webhook configurations: API server contract, scoped fail-closed, and manifests in step with the code."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.admission import registration
from webhook.admission.endpoints import ENDPOINTS

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests" / "webhook"
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
    mutating, validating = registration.render_webhook_configurations(ca_bundle=None, url="https://h")
    urls = {h["clientConfig"]["url"] for h in mutating["webhooks"] + validating["webhooks"]}
    assert urls == {"https://h" + e.path for e in ENDPOINTS}


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
    committed = list(yaml.safe_load_all((MANIFESTS / "base" / "webhooks.yaml").read_text()))
    rendered = list(registration.render_webhook_configurations(ca_bundle=None, service=registration.ServiceRef()))
    assert committed == rendered
