"""manifests/visibility: the component that puts the visibility API behind a cluster's aggregation layer.

Rendered on top of the cert-manager overlay as a user adds it, then checked against the real API server with a
server-side dry run of what it adds (APIServices, the delegation RBAC, the patched Deployment and Service).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.dryrun import dry_run
from webhook.local.cluster import LocalCluster

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


def test_component_adds_the_api_services_and_the_listener(cluster: LocalCluster, tmp_path: Path) -> None:
    overlay = os.path.relpath(ROOT / "manifests" / "deploy" / "overlays" / "cert-manager", tmp_path)
    component = os.path.relpath(ROOT / "manifests" / "visibility", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [overlay],
                "components": [component],
            }
        )
    )
    out = cluster.kubectl("kustomize", "--load-restrictor=LoadRestrictionsNone", str(tmp_path)).stdout
    objects: list[Obj] = [o for o in yaml.safe_load_all(out) if o]
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "APIService"}
    assert set(services) == {"v1beta2.visibility.kueue.x-k8s.io", "v1beta1.visibility.kueue.x-k8s.io"}
    webhook_service = next(
        o for o in objects if o["kind"] == "Service" and o["metadata"]["name"].endswith("webhook-service")
    )
    port = next(p for p in webhook_service["spec"]["ports"] if p["name"] == "visibility")
    for api in services.values():
        assert api["spec"]["service"] == {
            "name": webhook_service["metadata"]["name"],
            "namespace": webhook_service["metadata"]["namespace"],
            "port": port["port"],
        }
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert f"--visibility-bind-address=:{8082}" in container["args"]
    assert {"name": "visibility", "containerPort": 8082, "protocol": "TCP"} in container["ports"]
    roles = {o["roleRef"]["name"] for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")}
    assert {"system:auth-delegator", "extension-apiserver-authentication-reader"} <= roles

    added = [
        o
        for o in objects
        if o["kind"] in ("APIService", "ClusterRoleBinding", "RoleBinding") and "visibility" in o["metadata"]["name"]
    ]
    cluster.kubectl("create", "namespace", "turnstile-system", check=False)
    done = dry_run(cluster, added)
    assert done.returncode == 0, done.stderr
