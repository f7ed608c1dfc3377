"""Ordinary users for end-to-end tests: a person with the built-in ``edit`` ClusterRole in one namespace.

The user authenticates with a client certificate signed by the local cluster's CA (the API server takes the user
from its CN) and acts with kubectl only, as a batch user would. What ``edit`` may do on Turnstile's kinds comes
from the aggregated ClusterRoles in ``manifests/deploy/base/user-roles.yaml``, installed by ``install_user_roles``
and aggregated into ``edit`` by kube-controller-manager's clusterrole-aggregation controller.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path

from tests.e2e.kube import JSON
from webhook.local.client import LocalClient
from webhook.local.cluster import REPO_ROOT, LocalCluster

USER_ROLES = REPO_ROOT / "manifests" / "deploy" / "base" / "user-roles.yaml"


def install_user_roles(cluster: LocalCluster, *, timeout: float = 60.0) -> None:
    """Applies Turnstile's aggregated ClusterRoles and waits until ``edit`` carries their rules."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(USER_ROLES))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        edit = json.loads(cluster.kubectl("get", "clusterrole", "edit", "-o", "json").stdout)
        if any("workloads" in rule.get("resources", []) for rule in edit.get("rules") or []):
            return
        time.sleep(0.3)
    raise AssertionError("the edit ClusterRole never aggregated Turnstile's rules (is clusterrole-aggregation on?)")


class User:
    """``name`` with ``edit`` in ``namespace`` (a RoleBinding), acting through kubectl with their own identity."""

    def __init__(self, cluster: LocalCluster, name: str, namespace: str) -> None:
        self.cluster, self.name, self.namespace = cluster, name, namespace
        self.kubeconfig: Path = cluster.client_kubeconfig(name)
        cluster.kubectl(
            "create", "rolebinding", f"{name}-edit", "--clusterrole=edit", f"--user={name}", "-n", namespace
        )
        # The same identity for direct API calls, when two requests must follow each other faster than kubectl.
        user = json.loads(self.kubeconfig.read_text())["users"][0]["user"]
        cert, key = self.kubeconfig.with_suffix(".crt"), self.kubeconfig.with_suffix(".key")
        cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
        key.touch(mode=0o600)
        key.write_bytes(base64.b64decode(user["client-key-data"]))
        self.api = LocalClient(cluster, identity=(cert, key))

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.cluster.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", "-n", self.namespace, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{self.name}: kubectl {' '.join(args)} failed: {done.stderr.strip()}")
        return done

    def create(self, obj: JSON) -> JSON:
        return dict(json.loads(self.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj)).stdout))

    def patch(self, kind: str, name: str, change: JSON, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.kubectl("patch", kind, name, "--type=merge", "-p", json.dumps(change), check=check)

    def refused(self, *args: str, input: str | None = None) -> str:
        """Runs a kubectl command that must fail; returns its error output."""
        done = self.kubectl(*args, input=input, check=False)
        assert done.returncode != 0, f"{self.name}: kubectl {' '.join(args)} was accepted: {done.stdout[:500]}"
        return done.stderr

    def can_i(self, verb: str, resource: str) -> bool:
        return self.kubectl("auth", "can-i", verb, resource, check=False).stdout.strip() == "yes"
