"""The container image, built by ``make image`` (buildah, a base made from Debian's packages), proven on the cluster.

The image's entrypoint runs with the Deployment's command and arguments, the ServiceAccount, RBAC and
configuration of the kustomize base, read-only mounts where the Deployment has them and a read-only view of the
image itself: it must admit and release a Job. Needs buildah and debootstrap (``.ci/run`` installs both, so CI
always runs this); on a developer's machine without buildah the module is skipped, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kube import apply, cluster_queue, create, eventually, flavor, get, is_true, job, local_queue, workload_of
from tests.integration.imageturnstile import ImageTurnstile, buildah, image_config
from webhook.local.cluster import LocalCluster

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_NS = "turnstile-system"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
RBAC_KINDS = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    """``make image``'s build (seconds when its layers are cached); its name is the script's last line."""
    if shutil.which("buildah") is None or shutil.which("debootstrap") is None:
        if os.environ.get("CI"):
            pytest.fail(
                "buildah or debootstrap is missing: .ci/run installs both (apt-get install buildah debootstrap)"
            )
        pytest.skip("buildah/debootstrap not installed (apt-get install -y buildah debootstrap)")
    # A tag of this run's own: another checkout building at the same time cannot swap the image under the test.
    tag = f"localhost/turnstile:{VERSION}-test-{os.getpid()}"
    done = subprocess.run(
        ["bash", "hack/image/build.sh"],
        cwd=ROOT,
        env=os.environ | {"TURNSTILE_IMAGE": tag},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == tag
    yield tag
    buildah("rmi", tag, check=False)  # the tag only: the layers stay cached for the next build


@pytest.fixture(scope="module")
def base(cluster: LocalCluster) -> list[Obj]:
    """The kustomize base as rendered for a cluster (no webhook objects: those are registered per test)."""
    out = cluster.kubectl("kustomize", str(ROOT / "manifests" / "deploy" / "base")).stdout
    return [o for o in yaml.safe_load_all(out) if o]


def one(objects: list[Obj], kind: str) -> Obj:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


@pytest.fixture(scope="module")
def token(cluster: LocalCluster, base: list[Obj]) -> str:
    """The manifests' namespace, ServiceAccount and RBAC, for real, and a token of that ServiceAccount."""
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([o for o in base if o["kind"] in RBAC_KINDS]))
    return cluster.kubectl("create", "token", "turnstile", "-n", SYSTEM_NS, "--duration=1h").stdout.strip()


@pytest.fixture(scope="module")
def containerised(
    cluster: LocalCluster, image: str, base: list[Obj], token: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ImageTurnstile]:
    """One working container for the module: the checks of its view and the process share it."""
    config = yaml.safe_load(one(base, "ConfigMap")["data"]["config.yaml"])
    # Shorter than the manifests' 15 s: a Lease left behind by an earlier test's replica expires sooner.
    config["leaderElection"] |= {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s"}
    local = ImageTurnstile(
        cluster,
        tmp_path_factory.mktemp("image"),
        image=image,
        deployment=one(base, "Deployment"),
        config=config,
        token=token,
    )
    try:
        yield local
    finally:
        try:
            local.unregister()
            local.stop()
            if local.log_file.exists() and local.process is not None and local.process.returncode not in (0, None):
                print(local.log_file.read_text()[-5000:])
        finally:
            local.remove()  # the working container, whatever happened


def test_image_metadata(image: str) -> None:
    config = image_config(image)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["turnstile"]
    assert config["Cmd"] == ["run"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.source"].startswith("https://")


def test_version_inside_the_image_is_the_package_version(image: str) -> None:
    ctr = buildah("from", "--pull=never", image).stdout.strip().splitlines()[-1]
    try:
        done = buildah("run", "--isolation=chroot", ctr, "--", *image_config(image)["Entrypoint"], "--version")
    finally:
        buildah("rm", ctr, check=False)
    assert done.stdout == f"turnstile {VERSION}\n"


def test_the_image_holds_no_build_tools_and_a_read_only_view(containerised: ImageTurnstile) -> None:
    probe = (
        "import importlib.util, os, shutil\n"
        "print('pip', importlib.util.find_spec('pip') is not None)\n"
        "print('tools', sorted(t for t in ('gcc', 'cc', 'make', 'pip', 'pip3', 'apt-get') if shutil.which(t)))\n"
        "site = '/opt/turnstile/lib/python3.11/site-packages'\n"
        "print('tests', os.path.exists('/src') or os.path.exists(site + '/tests'))\n"
        "print('uid', os.getuid(), os.getgid())\n"
        "for path in ('/opt/turnstile/x', '/usr/x', '/etc/x', '/x', '/etc/turnstile/tls/x', '/tmp/x'):\n"
        "    try:\n"
        "        open(path, 'w').close()\n"
        "        print('writable', path)\n"
        "    except OSError as e:\n"
        "        print('refused', path, e.strerror)\n"
        "print('config', open('/etc/turnstile/config.yaml').read().count('reconcilerUsers'))\n"
        "print('token', len(open('/var/run/secrets/kubernetes.io/serviceaccount/token').read()) > 100)\n"
    )
    done = containerised.run_in_image("/opt/turnstile/bin/python3", "-c", probe)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == ["pip False", "tools []", "tests False", "uid 65532 65532"]
    assert lines[4:10] == [
        "refused /opt/turnstile/x Read-only file system",
        "refused /usr/x Read-only file system",
        "refused /etc/x Read-only file system",
        "refused /x Permission denied",
        "refused /etc/turnstile/tls/x Read-only file system",
        "writable /tmp/x",  # the Deployment's emptyDir
    ]
    assert lines[10:] == ["config 1", "token True"]


def test_the_containerised_turnstile_admits_and_releases_a_job(
    cluster: LocalCluster, image: str, base: list[Obj], containerised: ImageTurnstile, namespace: str
) -> None:
    # What runs is the Deployment's command, which is the image's entrypoint.
    [container] = one(base, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["command"] == image_config(image)["Entrypoint"]
    containerised.start()
    cq = f"cq-{namespace}"
    apply(
        cluster,
        flavor("image-flavor", node_labels={"pool": "image"}),
        cluster_queue(cq, flavors={"image-flavor": {"cpu": "2"}}),
        local_queue(namespace, "q", cq),
    )
    created = create(cluster, job(namespace, "from-image", queue="q"))
    assert created["spec"]["suspend"] is True  # the mutating webhook, served from the container

    running = eventually(lambda: (j := get(cluster, "job", "from-image", namespace))["spec"]["suspend"] is False and j)
    assert running["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "image"}
    eventually(lambda: is_true(workload_of(cluster, namespace, "from-image") or {}, "Admitted"))
    eventually(lambda: (get(cluster, "clusterqueue", cq).get("status") or {}).get("admittedWorkloads") == 1)

    # The one that admitted it is the containerised process: it holds the Lease, under its container's hostname.
    lease = get(cluster, "lease", "turnstile.x-k8s.io", SYSTEM_NS)
    assert lease["spec"]["holderIdentity"].startswith(f"{containerised.hostname}_")
    log = containerised.log_file.read_text()
    assert "became leader" in log
    assert "forbidden" not in log.lower()

    # SIGTERM (what the kubelet sends) stops it cleanly.
    containerised.stop()
    assert containerised.process is not None
    assert containerised.process.returncode == 0, containerised.log_file.read_text()[-3000:]
