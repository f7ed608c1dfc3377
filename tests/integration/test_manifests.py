"""The install manifests against the real kube-apiserver: they render, the server accepts them, RBAC is minimal.

cert-manager is not installed in the test cluster. Its objects (Issuer, Certificate) are split off and must be
refused with the exact "no matches for kind" error; everything else of the overlay goes through a server-side
dry run. No stand-in CRD is installed: a schema-less stand-in would accept anything and prove nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kube import apply, cluster_queue, create, eventually, flavor, get, is_true, job, local_queue, workload_of
from tests.integration.dryrun import dry_run
from webhook.config import load_config
from webhook.local.cluster import LocalCluster, free_port
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS = [pytest.param("cert-manager", id="cert-manager"), pytest.param("self-managed", id="self-managed")]
SYSTEM_NS = "turnstile-system"
SA_USER = f"system:serviceaccount:{SYSTEM_NS}:turnstile"
POD_LABELS = {"app.kubernetes.io/name": "turnstile", "app.kubernetes.io/component": "controller-manager"}

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of manifests/ where `turnstile certs` has written the self-managed files, as a user would."""
    root = tmp_path_factory.mktemp("install")
    shutil.copytree(ROOT / "manifests", root / "manifests")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "webhook",
            "certs",
            "--dir",
            str(root / "certs"),
            "--manifests",
            str(root / "manifests" / "webhook" / "self-managed"),
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return root / "manifests"


def render(cluster: LocalCluster, manifests: Path, overlay: str) -> list[Obj]:
    out = cluster.kubectl("kustomize", str(manifests / "deploy" / "overlays" / overlay)).stdout
    return [o for o in yaml.safe_load_all(out) if o]


def one(objects: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{kind}/{name}: {[o['metadata']['name'] for o in found]}"
    return found[0]


@pytest.fixture(scope="module")
def system_namespace(cluster: LocalCluster, manifests: Path) -> str:
    """turnstile-system for real: a dry run of its namespaced objects needs the namespace to exist."""
    namespace = one(render(cluster, manifests, "cert-manager"), "Namespace")
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(namespace))
    return SYSTEM_NS


# -- rendering ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_everything_turnstile_needs(cluster: LocalCluster, manifests: Path, overlay: str) -> None:
    objects = render(cluster, manifests, overlay)
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    for expected in [
        ("Namespace", SYSTEM_NS),
        ("ServiceAccount", "turnstile"),
        ("ClusterRole", "turnstile-manager"),
        ("ClusterRoleBinding", "turnstile-manager"),
        ("Role", "turnstile-leader-election"),
        ("RoleBinding", "turnstile-leader-election"),
        ("Deployment", "turnstile-controller-manager"),
        ("PodDisruptionBudget", "turnstile-controller-manager"),
        ("Service", "turnstile-webhook-service"),
        ("Service", "turnstile-metrics-service"),
        ("NetworkPolicy", "turnstile-webhook"),
        ("NetworkPolicy", "turnstile-metrics"),
        ("MutatingWebhookConfiguration", "turnstile"),
        ("ValidatingWebhookConfiguration", "turnstile"),
        ("CustomResourceDefinition", "workloads.kueue.x-k8s.io"),
        ("CustomResourceDefinition", "clusterqueues.kueue.x-k8s.io"),
    ]:
        assert expected in kinds
    secrets = [o for o in objects if o["kind"] == "Secret"]
    if overlay == "self-managed":
        assert [s["metadata"]["name"] for s in secrets] == ["turnstile-webhook-server-cert"]
        assert all(
            w.get("clientConfig", {}).get("caBundle")
            for w in one(objects, "ValidatingWebhookConfiguration")["webhooks"]
        )
    else:
        assert secrets == []
        assert (
            one(objects, "Certificate", "turnstile-serving-cert")["spec"]["secretName"]
            == "turnstile-webhook-server-cert"
        )
        annotations = one(objects, "MutatingWebhookConfiguration")["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == f"{SYSTEM_NS}/turnstile-serving-cert"


def test_pieces_agree_with_each_other(cluster: LocalCluster, manifests: Path) -> None:
    """Names and ports that must match across files: Service selectors, the config, mounts, the Secret."""
    objects = render(cluster, manifests, "cert-manager")
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    assert pod["metadata"]["labels"] == POD_LABELS
    assert deployment["spec"]["replicas"] == 2
    assert pod["spec"]["serviceAccountName"] == "turnstile"
    assert container["command"] == ["turnstile"]
    assert container["args"] == ["run", "--config", "/etc/turnstile/config.yaml"]
    for name in ("turnstile-webhook-service", "turnstile-metrics-service"):
        assert one(objects, "Service", name)["spec"]["selector"] == POD_LABELS
    assert one(objects, "PodDisruptionBudget")["spec"] == {"minAvailable": 1, "selector": {"matchLabels": POD_LABELS}}

    # The configuration the pod gets loads, trusts the Deployment's ServiceAccount, and matches the pod spec.
    config_map = one(objects, "ConfigMap")
    config_path = manifests.parent / "config.yaml"
    config_path.write_text(config_map["data"]["config.yaml"])
    config = load_config(config_path)
    assert config.trusted_users() == (SA_USER,)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"webhook": config.webhook.port, "metrics": int(config.metrics.bind_address.rsplit(":", 1)[1])}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "webhook", "scheme": "HTTPS"}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert mounts["webhook-tls"] == config.webhook.cert_dir
    assert volumes["webhook-tls"]["secret"]["secretName"] == "turnstile-webhook-server-cert"
    assert volumes["config"]["configMap"]["name"] == config_map["metadata"]["name"]  # the hashed name
    webhook_service = one(objects, "Service", "turnstile-webhook-service")["spec"]["ports"][0]
    assert webhook_service["port"] == 443
    assert webhook_service["targetPort"] == config.webhook.port


# -- the API server's verdict ---------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_server_side_dry_run_accepts_the_overlay(
    cluster: LocalCluster, manifests: Path, overlay: str, system_namespace: str
) -> None:
    objects = render(cluster, manifests, overlay)
    cert_manager = [o for o in objects if o["apiVersion"].startswith("cert-manager.io/")]
    rest = [o for o in objects if o not in cert_manager]

    done = dry_run(cluster, rest)
    assert done.returncode == 0, done.stderr
    # The namespace warns (and enforces) restricted: a template that would violate it shows up here.
    assert "PodSecurity" not in done.stderr, done.stderr
    applied = {line.split()[0] for line in done.stdout.splitlines()}
    assert "deployment.apps/turnstile-controller-manager" in applied
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/turnstile" in applied

    assert bool(cert_manager) == (overlay == "cert-manager")
    for obj in cert_manager:
        refused = dry_run(cluster, [obj])
        assert refused.returncode != 0
        assert f'no matches for kind "{obj["kind"]}" in version "cert-manager.io/v1"' in refused.stderr


def test_a_weaker_security_context_would_be_flagged(
    cluster: LocalCluster, manifests: Path, system_namespace: str
) -> None:
    """The control for the check above: the same dry run does report a restricted-standard violation."""
    deployment = one(render(cluster, manifests, "self-managed"), "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    container["securityContext"]["allowPrivilegeEscalation"] = True
    done = dry_run(cluster, [deployment])
    assert "would violate PodSecurity" in done.stderr
    assert "allowPrivilegeEscalation" in done.stderr


# -- RBAC -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def turnstile_rbac(cluster: LocalCluster, manifests: Path, system_namespace: str) -> None:
    """The ServiceAccount and every RBAC object of the overlay, created for real."""
    rbac_kinds = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    objects = [o for o in render(cluster, manifests, "cert-manager") if o["kind"] in rbac_kinds]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


@pytest.fixture(scope="module")
def sa_kubeconfig(cluster: LocalCluster, turnstile_rbac: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig holding only a token of Turnstile's ServiceAccount, as the pod would have."""
    token = cluster.kubectl("create", "token", "turnstile", "-n", SYSTEM_NS, "--duration=1h").stdout.strip()
    assert token.count(".") == 2  # a JWT
    path = tmp_path_factory.mktemp("sa") / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": cluster.server, "certificate-authority": str(cluster.pki_dir / "ca.crt")},
                    }
                ],
                "users": [{"name": "turnstile", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "turnstile"}}],
                "current-context": "c",
            }
        )
    )
    return path


def as_token(cluster: LocalCluster, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cluster.bin_dir / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def can_i(cluster: LocalCluster, *args: str, who: list[str]) -> bool:
    done = cluster.kubectl("auth", "can-i", *args, *who, check=False)
    answer = done.stdout.strip()
    assert answer in ("yes", "no"), done.stderr
    return answer == "yes"


SA_CASES = [
    # what Turnstile does
    pytest.param(["list", "jobs.batch", "-A"], True, id="list-jobs-everywhere"),
    pytest.param(["watch", "jobs.batch", "-A"], True, id="watch-jobs"),
    pytest.param(["patch", "jobs.batch", "-n", "team-a"], True, id="suspend-release-jobs"),
    pytest.param(["update", "jobs.batch", "--subresource=status", "-n", "team-a"], True, id="clear-job-start-time"),
    pytest.param(["create", "workloads.kueue.x-k8s.io", "-n", "team-a"], True, id="create-workloads"),
    pytest.param(["delete", "workloads.kueue.x-k8s.io", "-n", "team-a"], True, id="delete-workloads"),
    pytest.param(["update", "workloads.kueue.x-k8s.io", "--subresource=status", "-n", "team-a"], True, id="admit"),
    pytest.param(["patch", "clusterqueues.kueue.x-k8s.io", "--subresource=status"], True, id="cq-status"),
    pytest.param(["patch", "localqueues.kueue.x-k8s.io", "--subresource=status", "-n", "a"], True, id="lq-status"),
    pytest.param(["patch", "pods", "-n", "team-a"], True, id="ungate-pods"),
    pytest.param(["delete", "pods", "-n", "team-a"], True, id="evict-pod-groups"),
    pytest.param(["list", "namespaces"], True, id="list-namespaces"),
    pytest.param(["watch", "priorityclasses.scheduling.k8s.io"], True, id="watch-priorityclasses"),
    pytest.param(["watch", "resourceflavors.kueue.x-k8s.io"], True, id="watch-flavors"),
    pytest.param(["create", "events", "-n", "team-a"], True, id="events"),
    pytest.param(["get", "leases.coordination.k8s.io", "-n", SYSTEM_NS], True, id="get-own-lease"),
    pytest.param(["create", "leases.coordination.k8s.io", "-n", SYSTEM_NS], True, id="create-own-lease"),
    pytest.param(["update", "leases.coordination.k8s.io", "-n", SYSTEM_NS], True, id="take-own-lease"),
    pytest.param(["patch", "leases.coordination.k8s.io", "-n", SYSTEM_NS], True, id="renew-own-lease"),
    # what it must not do
    pytest.param(["get", "secrets", "-n", SYSTEM_NS], False, id="no-secrets-at-home"),
    pytest.param(["list", "secrets", "-A"], False, id="no-secrets-anywhere"),
    pytest.param(["delete", "jobs.batch", "-n", "team-a"], False, id="no-job-delete"),
    pytest.param(["create", "jobs.batch", "-n", "team-a"], False, id="no-job-create"),
    pytest.param(["update", "leases.coordination.k8s.io", "-n", "kube-system"], False, id="no-kube-system-leases"),
    pytest.param(["update", "leases.coordination.k8s.io", "-n", "default"], False, id="no-other-leases"),
    pytest.param(["delete", "leases.coordination.k8s.io", "-n", SYSTEM_NS], False, id="no-lease-delete"),
    # Removing resource-in-use from a deleted ClusterQueue or ResourceFlavor is an update (as for Kueue's manager);
    # it may not create, patch or delete them.
    pytest.param(["update", "clusterqueues.kueue.x-k8s.io"], True, id="clears-queue-finalizers"),
    pytest.param(["patch", "clusterqueues.kueue.x-k8s.io"], False, id="no-queue-patch"),
    pytest.param(["delete", "clusterqueues.kueue.x-k8s.io"], False, id="no-queue-delete"),
    pytest.param(["create", "resourceflavors.kueue.x-k8s.io"], False, id="no-flavor-create"),
    pytest.param(["watch", "limitranges", "-n", "team-a"], True, id="watch-limitranges"),
    pytest.param(["watch", "runtimeclasses.node.k8s.io"], True, id="watch-runtimeclasses"),
    pytest.param(["create", "localqueues.kueue.x-k8s.io", "-n", "team-a"], False, id="no-localqueue-create"),
    pytest.param(["get", "configmaps", "-n", SYSTEM_NS], False, id="no-configmaps"),
    pytest.param(["patch", "mutatingwebhookconfigurations"], False, id="no-webhook-config-writes"),
    pytest.param(["update", "customresourcedefinitions"], False, id="no-crd-writes"),
    pytest.param(["create", "pods", "-n", "team-a"], False, id="no-pod-create"),
]


@pytest.mark.parametrize(("request_", "allowed"), SA_CASES)
def test_service_account_rbac(cluster: LocalCluster, turnstile_rbac: None, request_: list[str], allowed: bool) -> None:
    assert can_i(cluster, *request_, who=[f"--as={SA_USER}"]) is allowed


def test_turnstile_runs_with_only_its_service_account(
    cluster: LocalCluster, sa_kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    """The whole path of one job with Turnstile holding nothing but the manifests' ServiceAccount token."""
    local = LocalTurnstile(
        cluster, tmp_path / "turnstile", kubeconfig=sa_kubeconfig, config={"reconcilerUsers": [SA_USER]}
    )
    local.start()
    try:
        cq = f"cq-{namespace}"
        apply(
            cluster,
            flavor("rbac-flavor", node_labels={"pool": "rbac"}),
            cluster_queue(cq, flavors={"rbac-flavor": {"cpu": "2"}}),
            local_queue(namespace, "q", cq),
        )
        create(cluster, job(namespace, "sa-job", queue="q"))
        running = eventually(lambda: (j := get(cluster, "job", "sa-job", namespace))["spec"]["suspend"] is False and j)
        assert running["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "rbac"}
        eventually(lambda: is_true(workload_of(cluster, namespace, "sa-job") or {}, "Admitted"))
        eventually(lambda: (get(cluster, "clusterqueue", cq).get("status") or {}).get("admittedWorkloads") == 1)
        assert "forbidden" not in local.log_file.read_text().lower()
    finally:
        local.unregister()
        local.stop()


def test_service_account_token_for_real(cluster: LocalCluster, sa_kubeconfig: Path) -> None:
    """The same answers for the token itself: real requests, authenticated as the pod would be."""
    assert (
        as_token(cluster, sa_kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout
        == SA_USER
    )
    listed = as_token(cluster, sa_kubeconfig, "get", "jobs.batch,workloads.kueue.x-k8s.io", "-A")
    assert listed.returncode == 0, listed.stderr
    secrets = as_token(cluster, sa_kubeconfig, "get", "secrets", "-n", SYSTEM_NS)
    assert secrets.returncode != 0
    assert "Forbidden" in secrets.stderr
    assert 'cannot list resource "secrets"' in secrets.stderr
    other_lease = as_token(
        cluster, sa_kubeconfig, "auth", "can-i", "update", "leases.coordination.k8s.io", "-n", "default"
    )
    assert other_lease.stdout.strip() == "no"
    own_lease = as_token(
        cluster, sa_kubeconfig, "auth", "can-i", "update", "leases.coordination.k8s.io", "-n", SYSTEM_NS
    )
    assert own_lease.stdout.strip() == "yes"


@pytest.fixture(scope="module")
def role_aggregation(cluster: LocalCluster, turnstile_rbac: None) -> Iterator[None]:
    """kube-controller-manager's clusterrole-aggregation controller, which the shared cluster does not run.

    Without it ``view``/``edit``/``admin`` never pick up aggregated rules, and the user test would say nothing.
    """
    log = (cluster.kubeconfig.parent / "aggregation-controller.log").open("wb")
    proc = subprocess.Popen(
        [
            str(cluster.bin_dir / "kube-controller-manager"),
            f"--kubeconfig={cluster.kubeconfig}",
            "--controllers=clusterrole-aggregation",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--authentication-kubeconfig={cluster.kubeconfig}",
            f"--authorization-kubeconfig={cluster.kubeconfig}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            edit = yaml.safe_load(cluster.kubectl("get", "clusterrole", "edit", "-o", "yaml").stdout)
            if any("workloads" in rule.get("resources", []) for rule in edit.get("rules") or []):
                break
            assert proc.poll() is None, (cluster.kubeconfig.parent / "aggregation-controller.log").read_text()[-2000:]
            time.sleep(0.5)
        else:
            pytest.fail("the edit ClusterRole never aggregated Turnstile's rules")
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


USER_CASES = [
    pytest.param("edit", ["get", "workloads.kueue.x-k8s.io"], True, id="edit-reads-workloads"),
    pytest.param("edit", ["list", "localqueues.kueue.x-k8s.io"], True, id="edit-reads-localqueues"),
    pytest.param("edit", ["create", "workloads.kueue.x-k8s.io"], False, id="edit-no-workload-create"),
    pytest.param("edit", ["patch", "workloads.kueue.x-k8s.io"], False, id="edit-no-workload-patch"),
    pytest.param("edit", ["delete", "workloads.kueue.x-k8s.io"], False, id="edit-no-workload-delete"),
    pytest.param(
        "edit", ["patch", "workloads.kueue.x-k8s.io", "--subresource=status"], False, id="edit-no-status-patch"
    ),
    pytest.param(
        "edit", ["update", "workloads.kueue.x-k8s.io", "--subresource=status"], False, id="edit-no-status-update"
    ),
    pytest.param("edit", ["create", "localqueues.kueue.x-k8s.io"], False, id="edit-no-localqueue-create"),
    pytest.param("view", ["get", "workloads.kueue.x-k8s.io", "--subresource=status"], True, id="view-reads-status"),
    pytest.param("view", ["create", "workloads.kueue.x-k8s.io"], False, id="view-read-only"),
    pytest.param("admin", ["create", "localqueues.kueue.x-k8s.io"], True, id="admin-creates-localqueues"),
    pytest.param("admin", ["patch", "workloads.kueue.x-k8s.io", "--subresource=status"], False, id="admin-no-status"),
    pytest.param(
        "admin", ["patch", "localqueues.kueue.x-k8s.io", "--subresource=status"], False, id="admin-no-lq-status"
    ),
]


@pytest.mark.parametrize(("role", "request_", "allowed"), USER_CASES)
def test_batch_user_roles(
    cluster: LocalCluster, role_aggregation: None, namespace: str, role: str, request_: list[str], allowed: bool
) -> None:
    user = f"someone-with-{role}"
    cluster.kubectl("create", "rolebinding", f"{user}", f"--clusterrole={role}", f"--user={user}", "-n", namespace)
    who = [f"--as={user}", "--as-group=system:authenticated", "-n", namespace]
    assert can_i(cluster, *request_, who=who) is allowed
    # A RoleBinding grants nothing outside its namespace.
    assert not can_i(cluster, "get", "workloads.kueue.x-k8s.io", who=[f"--as={user}", "-n", "default"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_wires_the_crds_conversion_webhook(cluster: LocalCluster, manifests: Path, overlay: str) -> None:
    """ClusterQueue, LocalQueue, Workload and Cohort convert through /convert on a Service that publishes unready pods,
    with the caBundle from cert-manager's injector or from `turnstile certs`; the other CRDs need no webhook."""
    objects = render(cluster, manifests, overlay)
    service = one(objects, "Service", "turnstile-conversion-service")
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == POD_LABELS
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        conversion = crd["spec"].get("conversion")
        if crd["metadata"]["name"].split(".")[0] not in ("clusterqueues", "localqueues", "workloads", "cohorts"):
            assert conversion is None
            continue
        client = conversion["webhook"]["clientConfig"]
        assert client["service"] == {
            "namespace": SYSTEM_NS,
            "name": "turnstile-conversion-service",
            "path": "/convert",
            "port": 443,
        }
        if overlay == "self-managed":
            assert client["caBundle"]
        else:
            assert (
                crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
                == f"{SYSTEM_NS}/turnstile-serving-cert"
            )
