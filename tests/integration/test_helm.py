"""The Helm chart (manifests/helm/turnstile) against the kustomize overlays and the real kube-apiserver.

The chart must render the same objects as ``manifests/deploy/overlays/*`` (same kinds and names, same RBAC
rules, same webhooks, same Deployment), with only Helm's own labels and the ConfigMap's name hash told apart,
and the API server must accept its output in a server-side dry run. The CRDs, the RBAC files and the webhook
configurations are links into the kustomize sources: a change there reaches the chart, and this module is the
guard that nothing else diverged. helm is built from its Go module by hack/build-helm.sh (cached).
"""

from __future__ import annotations

import base64
import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.dryrun import dry_run
from webhook.config import load_config
from webhook.local.cluster import LocalCluster

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "turnstile"
SYSTEM_NS = "turnstile-system"
MODES = [pytest.param("cert-manager", id="cert-manager"), pytest.param("self-managed", id="self-managed")]
# Labels Helm charts add by convention; everything else of an object's metadata must match.
HELM_LABELS = {
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
}
# Annotations only Helm needs: the config checksum that rolls the pods, and the CRDs kept on `helm uninstall`.
HELM_ANNOTATIONS = {"checksum/config", "helm.sh/resource-policy"}
CONFIG_HASH = re.compile(r"^(turnstile-config)-[a-z0-9]{10}$")
RBAC_KINDS = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> Path:
    done = subprocess.run(
        ["bash", "hack/build-helm.sh"], cwd=ROOT, capture_output=True, text=True, timeout=3000, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of manifests/ with the self-managed files `turnstile certs` writes; the same pair feeds the chart."""
    root = tmp_path_factory.mktemp("install")
    shutil.copytree(ROOT / "manifests", root / "manifests", symlinks=True)
    subprocess.run(
        [sys.executable, "-m", "webhook", "certs", "--dir", str(root / "certs"), "--manifests",
         str(root / "manifests" / "webhook" / "self-managed")],
        check=True, capture_output=True, cwd=ROOT,
    )  # fmt: skip
    return root


def template(
    helm: Path, *args: str, namespace: str = SYSTEM_NS, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm), "template", "turnstile", str(CHART), "--namespace", namespace, "--include-crds", *args],
        capture_output=True, text=True, timeout=60, check=check,
    )  # fmt: skip


def chart(helm: Path, mode: str, certs: Path, *args: str, namespace: str = SYSTEM_NS) -> list[Obj]:
    tls = []
    if mode == "self-managed":
        tls = [
            f"--set-file=certificates.selfManaged.caBundle={certs / 'certs' / 'ca.crt'}",
            f"--set-file=certificates.selfManaged.tlsCrt={certs / 'certs' / 'tls.crt'}",
            f"--set-file=certificates.selfManaged.tlsKey={certs / 'certs' / 'tls.key'}",
        ]
    out = template(helm, f"--set=certificates.mode={mode}", "--set=namespace.create=true", *tls, *args,
                   namespace=namespace).stdout  # fmt: skip
    return [o for o in yaml.safe_load_all(out) if o]


def kustomize(cluster: LocalCluster, certs: Path, mode: str) -> list[Obj]:
    out = cluster.kubectl("kustomize", str(certs / "manifests" / "deploy" / "overlays" / mode)).stdout
    return [o for o in yaml.safe_load_all(out) if o]


def _strip(meta: Obj) -> None:
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in HELM_LABELS}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in HELM_ANNOTATIONS}
    meta.pop("labels", None)
    meta.pop("annotations", None)
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations


def normalized(obj: Obj) -> Obj:
    """What must agree between the two renderings: all but Helm's labels, the checksum, the ConfigMap's hash and
    the text layout of a Secret's data or the ConfigMap's file."""
    obj = copy.deepcopy(obj)
    _strip(obj["metadata"])
    if obj["kind"] == "ConfigMap":
        obj["metadata"]["name"] = CONFIG_HASH.sub(r"\1", obj["metadata"]["name"])
        obj["data"] = {k: yaml.safe_load(v) for k, v in obj["data"].items()}
    if obj["kind"] == "Secret":  # kustomize wraps the base64 text in lines, Helm does not
        obj["data"] = {k: base64.b64decode(v) for k, v in obj["data"].items()}
    if obj["kind"] == "Deployment":
        pod = obj["spec"]["template"]
        _strip(pod["metadata"])
        for volume in pod["spec"]["volumes"]:
            if "configMap" in volume:
                volume["configMap"]["name"] = CONFIG_HASH.sub(r"\1", volume["configMap"]["name"])
    return obj


def squeezed(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return {k: squeezed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [squeezed(v) for v in value]
    return value


def by_key(objects: list[Obj]) -> dict[tuple[str, str], Obj]:
    keyed = {(o["kind"], normalized(o)["metadata"]["name"]): normalized(o) for o in objects}
    assert len(keyed) == len(objects), "two objects of the same kind and name"
    return keyed


# -- the chart is the kustomize install -----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_chart_renders_the_same_objects_as_the_overlay(
    cluster: LocalCluster, helm: Path, certs: Path, mode: str
) -> None:
    ours, theirs = by_key(chart(helm, mode, certs)), by_key(kustomize(cluster, certs, mode))
    assert sorted(ours) == sorted(theirs)
    assert {kind for kind, _ in ours} >= {
        "Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
        "RoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "NetworkPolicy",
        "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
    }  # fmt: skip
    # RBAC first, for a readable failure: every rule, binding and aggregation label.
    for key in sorted(k for k in ours if k[0] in RBAC_KINDS):
        for field in ("rules", "roleRef", "subjects"):
            assert ours[key].get(field) == theirs[key].get(field), (key, field)
        assert ours[key]["metadata"] == theirs[key]["metadata"], key
    # The chart renders manifests/crds (files/crds/ links) with the conversion wiring of the mode, as the overlay's
    # patches do. kustomize's YAML round trip adds a blank line inside some folded CEL rules (harmless to CEL), so
    # the CRDs compare with whitespace runs squeezed.
    crd_files = [yaml.safe_load(p.read_text()) for p in (ROOT / "manifests" / "crds").glob("*.yaml")]
    crds = {c["metadata"]["name"] for c in crd_files if c["kind"] != "Kustomization"}
    assert {name for kind, name in ours if kind == "CustomResourceDefinition"} == crds
    for key in sorted(ours):
        if key[0] == "CustomResourceDefinition":
            assert squeezed(ours[key]) == squeezed(theirs[key]), key
        else:
            assert ours[key] == theirs[key], key


def test_chart_crds_are_links_to_manifests_crds() -> None:
    """Not copies: issue-9's CRD changes (and any new CRD) flow into the chart; the test above catches a missing one."""
    sources = sorted(p.name for p in (ROOT / "manifests" / "crds").glob("*.yaml") if p.name != "kustomization.yaml")
    linked = sorted((CHART / "files" / "crds").iterdir())
    assert [p.name for p in linked] == sources
    for path in [*linked, *(p for p in (CHART / "files").iterdir() if p.name != "crds")]:
        assert path.is_symlink(), path
        assert path.resolve().is_relative_to(ROOT / "manifests"), path
        assert not path.resolve().is_relative_to(CHART), path


# -- the API server's verdict ---------------------------------------------------------------------------


def accepted_by_the_server(cluster: LocalCluster, objects: list[Obj]) -> set[str]:
    namespace = [o for o in objects if o["kind"] == "Namespace"]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(namespace))  # dry runs need it to exist
    cert_manager = [o for o in objects if o["apiVersion"].startswith("cert-manager.io/")]
    done = dry_run(cluster, [o for o in objects if o not in cert_manager])
    assert done.returncode == 0, done.stderr
    assert "PodSecurity" not in done.stderr, done.stderr  # the namespace enforces restricted
    # cert-manager is not installed in the test cluster: its kinds are refused by name, and only they are.
    for obj in cert_manager:
        refused = dry_run(cluster, [obj])
        assert f'no matches for kind "{obj["kind"]}" in version "cert-manager.io/v1"' in refused.stderr
    return {line.split()[0] for line in done.stdout.splitlines()}


@pytest.mark.parametrize("mode", MODES)
def test_server_side_dry_run_accepts_the_chart(cluster: LocalCluster, helm: Path, certs: Path, mode: str) -> None:
    objects = chart(helm, mode, certs)
    applied = accepted_by_the_server(cluster, objects)
    assert len(applied) == len([o for o in objects if not o["apiVersion"].startswith("cert-manager.io/")])
    assert "deployment.apps/turnstile-controller-manager" in applied
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/turnstile" in applied
    assert "customresourcedefinition.apiextensions.k8s.io/workloads.kueue.x-k8s.io" in applied
    assert ("secret/turnstile-webhook-server-cert" in applied) == (mode == "self-managed")


# -- values ---------------------------------------------------------------------------------------------


def test_values_reach_every_object_they_concern(cluster: LocalCluster, helm: Path, certs: Path) -> None:
    """Another release name and namespace, replicas, resources, image, configuration and namespace policy."""
    namespace = "batch-system"
    out = subprocess.run(
        [str(helm), "template", "queueing", str(CHART), "--namespace", namespace, "--set=namespace.create=true",
         "--set=replicaCount=3", "--set=resources.limits.memory=2Gi", "--set=image.repository=registry.test/ts",
         "--set=image.tag=9.9.9", "--set=config.manageJobsWithoutQueueName=true",
         "--set=config.integrations.frameworks={batch/job,pod}",
         "--set=namespacePolicy.matchLabels.team=batch", "--set=namespacePolicy.optInLabel=kueue.openshift.io/managed"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    objects = [o for o in yaml.safe_load_all(out) if o]
    names = {o["metadata"]["name"] for o in objects if o["kind"] not in {"CustomResourceDefinition", "Namespace"}}
    assert all(n.startswith("queueing-turnstile") for n in names), names
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
    namespaced = [o for o in objects if o["kind"] not in cluster_scoped]
    assert {o["metadata"].get("namespace") for o in namespaced if "Webhook" not in o["kind"]} == {namespace}
    converted = [o for o in objects if o["kind"] == "CustomResourceDefinition" and o["spec"].get("conversion")]
    assert len(converted) == 4  # ClusterQueue, LocalQueue, Workload, Cohort
    for crd in converted:
        service = crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
        assert (service["namespace"], service["name"]) == (namespace, "queueing-turnstile-conversion-service")

    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert deployment["spec"]["replicas"] == 3
    assert container["image"] == "registry.test/ts:9.9.9"
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "2Gi"}
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "queueing-turnstile"

    [config_map] = [o for o in objects if o["kind"] == "ConfigMap"]
    path = certs / "values-config.yaml"
    path.write_text(config_map["data"]["config.yaml"])
    config = load_config(path)  # the process would start with it
    assert config.trusted_users() == (f"system:serviceaccount:{namespace}:queueing-turnstile",)
    raw = yaml.safe_load(path.read_text())
    assert raw["namespace"] == namespace
    assert raw["namespaceOptInLabel"] == "kueue.openshift.io/managed"
    assert raw["integrations"]["frameworks"] == ["batch/job", "pod"]
    selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", namespace]}
        ],
        "matchLabels": {"team": "batch"},
    }
    assert raw["managedJobsNamespaceSelector"] == selector

    webhooks = [w for o in objects if o["kind"].endswith("WebhookConfiguration") for w in o["webhooks"]]
    assert {w["clientConfig"]["service"]["name"] for w in webhooks} == {"queueing-turnstile-webhook-service"}
    assert {w["clientConfig"]["service"]["namespace"] for w in webhooks} == {namespace}
    assert all(w["namespaceSelector"] == selector for w in webhooks)
    # manageJobsWithoutQueueName: every job is managed, so the unqueued twins fail closed too.
    assert {w["failurePolicy"] for w in webhooks if w["name"].startswith(("mjob", "vjob"))} == {"Fail"}
    [serving] = [o for o in objects if o["kind"] == "Certificate" and o["spec"].get("dnsNames")]
    assert serving["spec"]["dnsNames"][0] == f"queueing-turnstile-webhook-service.{namespace}.svc"

    try:
        applied = accepted_by_the_server(cluster, objects)
        assert "deployment.apps/queueing-turnstile-controller-manager" in applied
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_the_default_leaves_the_namespace_to_the_installer(helm: Path) -> None:
    """Helm needs the namespace before it installs: by default the chart does not also declare it."""
    kinds = [o["kind"] for o in yaml.safe_load_all(template(helm).stdout) if o]
    assert "Namespace" not in kinds
    assert "Deployment" in kinds


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--set=certificates.mode=vault"], "certificates.mode must be cert-manager or self-managed",
                     id="unknown-tls-mode"),
        pytest.param(["--set=certificates.mode=self-managed"], "certificates.selfManaged.caBundle: --set-file it",
                     id="self-managed-without-files"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_with_a_reason(helm: Path, args: list[str], message: str) -> None:
    done = template(helm, *args, check=False)
    assert done.returncode != 0
    assert message in done.stderr


def test_chart_lints(helm: Path) -> None:
    done = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout
