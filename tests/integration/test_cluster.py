"""The local control plane itself: it answers, serves our API group, and `up`/`down` behave."""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from webhook.local import cluster as cluster_module
from webhook.local.cluster import ClusterError, LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration


def _stopped(pid: int) -> bool:
    """Gone, or a zombie waiting to be reaped. The process may end between two reads of /proc: that is gone too."""
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_api_server_reports_the_built_version(cluster: LocalCluster) -> None:
    version = json.loads(cluster.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"].startswith("v1.36.")


def test_kueue_group_is_served(cluster: LocalCluster) -> None:
    resources = cluster.kubectl("api-resources", "--api-group=kueue.x-k8s.io", "-o", "name").stdout.split()
    assert {
        "clusterqueues.kueue.x-k8s.io",
        "cohorts.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "resourceflavors.kueue.x-k8s.io",
        "workloadpriorityclasses.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
    } <= set(resources)


def test_admin_is_authorized_and_anonymous_is_not(cluster: LocalCluster) -> None:
    assert cluster.kubectl("auth", "can-i", "create", "clusterqueues").stdout.strip() == "yes"
    anonymous = cluster.kubectl("get", "namespaces", "--as=nobody", check=False)
    assert anonymous.returncode != 0
    assert "forbidden" in anonymous.stderr.lower()


def _turnstile(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webhook", *args], capture_output=True, text=True, timeout=180, check=False
    )


def _children(pid: int) -> list[int]:
    return [int(c) for t in Path(f"/proc/{pid}/task").glob("*") for c in (t / "children").read_text().split()]


def _serves(port: int) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only "is it up"; the certificate is checked by the e2e tests
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=2, context=context) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.mark.timeout(240)  # what two tests of 120 s each did
def test_cli_up_twice_with_turnstile_restarts_it_and_down_stops_everything(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """One local cluster through its whole life by the CLI (one `up` costs a control plane, a scheduler and seven
    simulated nodes, so the checks share it): `up --with-turnstile`, a second `up` that finds it running, the
    default node profile Ready, Turnstile SIGKILLed and started again by its supervisor on the same port, and
    `down` stopping every process and removing the state."""
    state = tmp_path / "state"
    pids: list[int] = []
    first = _turnstile("cluster", "up", "--state-dir", str(state), "--with-turnstile")
    try:
        assert first.returncode == 0, first.stderr
        assert f"export KUBECONFIG={state.resolve() / 'kubeconfig'}" in first.stdout
        found = re.search(r"webhooks on https://127\.0\.0\.1:(\d+)", first.stdout)
        assert found, first.stdout
        port = int(found.group(1))
        second = _turnstile("cluster", "up", "--state-dir", str(state), "--with-turnstile")
        assert second.returncode == 0
        assert "already running" in second.stdout
        other = LocalCluster(state, bin_dir=cluster.bin_dir)
        assert other.load() is not None
        assert other.state is not None
        assert other.kubectl("get", "clusterqueues").returncode == 0
        pids = list(other.state.pids.values())
        # The default node profile: kube-scheduler and kwok run, and `up` returned with every node Ready.
        assert {"kube-scheduler", "kwok", "turnstile"} <= set(other.state.pids)
        ready_of = 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}'
        ready = other.kubectl("get", "nodes", "-o", ready_of).stdout.split()
        assert ready == ["True"] * len(other.state.nodes)
        assert len(other.state.nodes) == 7
        # Turnstile dies: its supervisor starts it again, serving on the same port.
        supervisor = other.state.pids["turnstile"]
        (killed,) = _children(supervisor)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (set(_children(supervisor)) - {killed} and _serves(port)):
            time.sleep(0.5)
        assert set(_children(supervisor)) - {killed}, "the supervisor started Turnstile again"
        assert _serves(port), "the new Turnstile serves on the same port"
    finally:
        down = _turnstile("cluster", "down", "--state-dir", str(state))
    assert down.returncode == 0, down.stderr
    assert not state.exists()
    for pid in pids:
        assert _stopped(pid), f"process {pid} still runs"


def test_a_cluster_handed_another_clusters_etcd_port_starts_its_own(
    cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two test workers can be handed the same free port: the loser's etcd exits while the winner's answers. The
    second cluster must not take the other's etcd for its own (its API server would store into it)."""
    assert cluster.state is not None
    taken = cluster.state.etcd_port
    ports = iter([taken])
    real = cluster_module.free_port
    monkeypatch.setattr(cluster_module, "free_port", lambda: next(ports, None) or real())
    other = LocalCluster(tmp_path / "other", bin_dir=cluster.bin_dir)
    try:
        other.start()
        assert other.state is not None
        assert other.state.etcd_port != taken
        other.kubectl("create", "namespace", "only-in-the-other-cluster")
        mine = cluster.kubectl("get", "namespace", "only-in-the-other-cluster", check=False)
        assert mine.returncode != 0, "the second cluster wrote into the first one's etcd"
    finally:
        other.stop()


def test_a_turnstile_that_does_not_get_ready_is_not_left_running(cluster: LocalCluster, tmp_path: Path) -> None:
    """A start that fails (here: readiness not reached in time) stops the process it spawned; before, a test whose
    fixture timed out during a start left a `turnstile run` behind, holding its port and a core."""
    local = LocalTurnstile(cluster, tmp_path / "turnstile")
    with pytest.raises(ClusterError, match=r"not ready|exited"):
        local.start(timeout=0.0, register=False)
    assert local.process is not None
    assert local.process.poll() is not None, "the process of a failed start is still running"
