"""Where the API server finds /convert: the three converted CRDs, a url or the conversion Service, the caBundle."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from webhook import tls
from webhook.admission import conversionconfig as cc

CRD_DIR = Path(__file__).resolve().parents[3] / "manifests" / "crds"


def test_a_url_replaces_the_service_and_ends_in_convert() -> None:
    patch = cc.conversion_patch(ca_bundle=b"PEM", url="https://127.0.0.1:9443/")

    webhook = patch["spec"]["conversion"]["webhook"]
    assert patch["spec"]["conversion"]["strategy"] == "Webhook"
    assert webhook["conversionReviewVersions"] == ["v1"]
    assert webhook["clientConfig"] == {
        "url": "https://127.0.0.1:9443/convert",
        "caBundle": base64.b64encode(b"PEM").decode(),
        "service": None,
    }


def test_self_managed_patches_name_the_four_crds_and_the_conversion_service() -> None:
    patches = cc.crd_patches(ca_bundle=b"PEM", namespace="batch-system")

    assert [p["metadata"]["name"] for p in patches] == [
        "clusterqueues.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
        "cohorts.kueue.x-k8s.io",
    ]
    for p in patches:
        assert p["spec"]["conversion"]["webhook"]["clientConfig"]["service"] == {
            "namespace": "batch-system",
            "name": "turnstile-conversion-service",
            "path": "/convert",
            "port": 443,
        }


def test_the_committed_crds_and_the_list_agree() -> None:
    webhook_crds = {
        doc["metadata"]["name"]
        for path in CRD_DIR.glob("*.yaml")
        if (doc := yaml.safe_load(path.read_text())).get("kind") == "CustomResourceDefinition"
        and doc["spec"].get("conversion", {}).get("strategy") == "Webhook"
    }
    assert webhook_crds == set(cc.CONVERTED_CRDS)


def test_the_serving_certificate_names_the_conversion_service_too() -> None:
    assert "turnstile-conversion-service.turnstile-system.svc" in tls.default_hosts()


@pytest.mark.parametrize("kwargs", [{}, {"url": "https://h", "service": cc.CONVERSION_SERVICE}])
def test_exactly_one_client_config(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        cc.client_config(ca_bundle=b"x", **kwargs)  # type: ignore[arg-type]
