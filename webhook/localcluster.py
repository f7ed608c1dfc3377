"""A real local control plane: etcd + kube-apiserver (+ kube-controller-manager when built) on loopback.

Backs ``turnstile cluster up|down|status`` and the integration tests' session fixture. The binaries are built
from Go modules by ``hack/build-control-plane.sh`` into a cache outside the repository; this module only starts
and stops them. Everything a cluster owns (certificates, etcd data, logs, kubeconfig, pids) lives in one state
directory, so ``down`` is "kill the recorded processes and remove the directory".
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from webhook import pki

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = REPO_ROOT / "manifests" / "crds"
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-control-plane.sh"
STATE_FILE = "cluster.json"


class ClusterError(RuntimeError):
    """The local control plane could not be built, started or reached; the message says what to do."""


def find_bin_dir() -> Path:
    """The directory holding etcd, kube-apiserver and kubectl, building them when the cache is cold."""
    configured = os.environ.get("TURNSTILE_BIN_DIR")
    if configured:
        path = Path(configured)
        if not (path / "kube-apiserver").exists():
            raise ClusterError(f"TURNSTILE_BIN_DIR={path} holds no kube-apiserver; run `make controlplane`")
        return path
    if not BUILD_SCRIPT.exists():
        raise ClusterError("set TURNSTILE_BIN_DIR to a directory with etcd, kube-apiserver and kubectl")
    print("locating the control plane (building it from Go modules if the cache is cold)...", file=sys.stderr)
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise ClusterError(f"{BUILD_SCRIPT} failed with exit code {done.returncode}; see its output above")
    return Path(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


@dataclass
class ClusterState:
    """What ``down`` and ``status`` need to find a running cluster again; saved as JSON in the state dir."""

    bin_dir: str
    etcd_port: int
    api_port: int
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"


class LocalCluster:
    """One control plane rooted in ``state_dir``."""

    def __init__(self, state_dir: Path, *, bin_dir: Path | None = None, controller_manager: bool = True) -> None:
        self.state_dir = state_dir.resolve()
        self._bin_dir = bin_dir
        self._want_kcm = controller_manager
        self.state: ClusterState | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- paths --------------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def pki_dir(self) -> Path:
        return self.state_dir / "pki"

    @property
    def bin_dir(self) -> Path:
        if self._bin_dir is None:
            self._bin_dir = find_bin_dir()
        return self._bin_dir

    @property
    def server(self) -> str:
        if self.state is None:
            raise ClusterError("the cluster is not running")
        return self.state.server

    @property
    def ca_pem(self) -> bytes:
        return (self.pki_dir / "ca.crt").read_bytes()

    # -- lifecycle ----------------------------------------------------------------------------------------
    def load(self) -> ClusterState | None:
        """The saved state of a cluster in this directory whose API server still runs, else None."""
        path = self.state_dir / STATE_FILE
        if not path.exists():
            return None
        state = ClusterState(**json.loads(path.read_text()))
        if not _alive(state.pids.get("kube-apiserver", -1)):
            return None
        self.state = state
        self._bin_dir = Path(state.bin_dir)
        return state

    def start(self, *, timeout: float = 120.0) -> ClusterState:
        """Starts etcd, kube-apiserver and (when built) kube-controller-manager; installs our CRDs."""
        if self.load() is not None:
            raise ClusterError(f"a cluster already runs from {self.state_dir} at {self.server}")
        bin_dir = self.bin_dir
        for binary in ("etcd", "kube-apiserver", "kubectl"):
            if not (bin_dir / binary).exists():
                raise ClusterError(f"{bin_dir / binary} is missing; run `make controlplane`")
        shutil.rmtree(self.state_dir, ignore_errors=True)
        (self.state_dir / "logs").mkdir(parents=True)
        self.state = ClusterState(bin_dir=str(bin_dir), etcd_port=free_port(), api_port=free_port())
        try:
            self._write_pki()
            self._start_etcd(timeout)
            self._start_apiserver(timeout)
            self._write_kubeconfig()
            if self._want_kcm and (bin_dir / "kube-controller-manager").exists():
                self._start_controller_manager()
            self.install_crds(timeout=timeout)
        except BaseException:
            self.stop()
            raise
        return self.state

    def stop(self) -> None:
        """Stops every process of this cluster and removes its state directory."""
        pids = dict(self.state.pids) if self.state else {}
        if not pids:
            saved = self.state_dir / STATE_FILE
            if saved.exists():
                pids = ClusterState(**json.loads(saved.read_text())).pids
        # Reverse start order: the API server goes before etcd so it does not log a storm of errors.
        for name in reversed(list(pids)):
            _terminate(pids[name], self._procs.get(name))
        self._procs.clear()
        self.state = None
        shutil.rmtree(self.state_dir, ignore_errors=True)

    # -- steps --------------------------------------------------------------------------------------------
    def adopt(self, name: str, pid: int) -> None:
        """Records a process started beside the cluster (e.g. Turnstile) so that ``stop`` ends it too."""
        assert self.state is not None
        self.state.pids[name] = pid
        (self.state_dir / STATE_FILE).write_text(json.dumps(asdict(self.state), indent=2))

    def _write_pki(self) -> None:
        ca = pki.new_ca("turnstile-local-ca")
        ca.write(self.pki_dir / "ca.crt", self.pki_dir / "ca.key")
        pki.new_serving_cert(ca, ["127.0.0.1", "localhost"]).write(
            self.pki_dir / "apiserver.crt", self.pki_dir / "apiserver.key"
        )
        pki.new_client_cert(ca, "turnstile-admin", ("system:masters",)).write(
            self.pki_dir / "admin.crt", self.pki_dir / "admin.key"
        )
        key = self.pki_dir / "sa.key"
        key.write_bytes(pki.new_private_key_pem())
        key.chmod(0o600)

    def _spawn(self, name: str, args: list[str]) -> None:
        assert self.state is not None
        log = (self.state_dir / "logs" / f"{name}.log").open("ab")
        # A session of its own: the processes outlive `turnstile cluster up` and ignore the terminal's ^C.
        proc = subprocess.Popen(
            [str(self.bin_dir / name), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self._procs[name] = proc
        self.state.pids[name] = proc.pid
        (self.state_dir / STATE_FILE).write_text(json.dumps(asdict(self.state), indent=2))

    def _start_etcd(self, timeout: float) -> None:
        assert self.state is not None
        client = f"http://127.0.0.1:{self.state.etcd_port}"
        self._spawn(
            "etcd",
            [
                f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls=http://127.0.0.1:{free_port()}",
                "--unsafe-no-fsync=true",
                "--quota-backend-bytes=4294967296",
                "--log-level=warn",
            ],
        )
        self._wait("etcd", timeout, lambda: _http_ok(f"{client}/health", None))

    def _start_apiserver(self, timeout: float) -> None:
        assert self.state is not None
        p = self.pki_dir
        port = self.state.api_port
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{self.state.etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={p}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                f"--client-ca-file={p / 'ca.crt'}",
                f"--service-account-issuer=https://127.0.0.1:{port}/",
                f"--service-account-key-file={p / 'sa.key'}",
                f"--service-account-signing-key-file={p / 'sa.key'}",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                # No default ServiceAccount is created without its controller; envtest disables this too.
                "--disable-admission-plugins=ServiceAccount",
                "--max-requests-inflight=2000",
                "--max-mutating-requests-inflight=1000",
            ],
        )
        context = self._admin_ssl_context()
        self._wait("kube-apiserver", timeout, lambda: _http_ok(f"{self.server}/readyz", context))

    def _start_controller_manager(self) -> None:
        assert self.state is not None
        p = self.pki_dir
        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                f"--root-ca-file={p / 'ca.crt'}",
                f"--service-account-private-key-file={p / 'sa.key'}",
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
                # Jobs create Pods, owners' deletion reaches dependants (a Job's Workload), namespaces delete, and the
                # built-in view/edit/admin roles pick up aggregated rules (tests act as users with `edit`).
                "--controllers=job-controller,garbage-collector-controller,namespace-controller,"
                "ttl-after-finished-controller,clusterrole-aggregation",
            ],
        )

    def _write_kubeconfig(self) -> None:
        admin = pki.KeyPair.read(self.pki_dir / "admin.crt", self.pki_dir / "admin.key")
        self._kubeconfig_for("turnstile-admin", admin, self.kubeconfig)

    def client_kubeconfig(self, user: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig for another identity (its own client certificate), e.g. for Turnstile itself."""
        ca = pki.KeyPair.read(self.pki_dir / "ca.crt", self.pki_dir / "ca.key")
        path = self.state_dir / f"kubeconfig-{user.replace(':', '_')}"
        self._kubeconfig_for(user, pki.new_client_cert(ca, user, groups), path)
        return path

    def _kubeconfig_for(self, user: str, pair: pki.KeyPair, path: Path) -> None:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "turnstile-local",
                    "cluster": {"server": self.server, "certificate-authority-data": b64(self.ca_pem)},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {"client-certificate-data": b64(pair.cert_pem), "client-key-data": b64(pair.key_pem)},
                }
            ],
            "contexts": [{"name": "turnstile-local", "context": {"cluster": "turnstile-local", "user": user}}],
            "current-context": "turnstile-local",
        }
        path.write_text(json.dumps(config, indent=2))
        path.chmod(0o600)

    def install_crds(self, *, timeout: float = 60.0) -> None:
        """Applies every CRD under manifests/crds/ and waits until the API server serves them."""
        files = sorted(CRD_DIR.glob("*.yaml")) if CRD_DIR.exists() else []
        files = [f for f in files if f.name != "kustomization.yaml"]
        if not files:
            return
        args = ["apply", "--server-side", "--force-conflicts"]
        for f in files:
            args += ["-f", str(f)]
        self.kubectl(*args)
        self.kubectl("wait", "--for=condition=Established", f"--timeout={int(timeout)}s", "crd", "--all")

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Runs the kubectl built with this control plane against it."""
        done = subprocess.run(
            [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def _admin_ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki_dir / "ca.crt"))
        context.load_cert_chain(self.pki_dir / "admin.crt", self.pki_dir / "admin.key")
        return context

    def _wait(self, name: str, timeout: float, ready: object) -> None:
        assert callable(ready)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise ClusterError(f"{name} exited with code {proc.returncode}; see {self._log_tail(name)}")
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError(f"{name} did not become ready within {timeout:.0f}s; see {self._log_tail(name)}")

    def _log_tail(self, name: str) -> str:
        log = self.state_dir / "logs" / f"{name}.log"
        try:
            tail = log.read_text(errors="replace").splitlines()[-15:]
        except OSError:
            return str(log)
        return f"{log}:\n" + "\n".join(tail)


def _http_ok(url: str, context: ssl.SSLContext | None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _terminate(pid: int, proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    if not _alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return
        elif not _alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait(timeout=5)


# -- the CLI's three verbs ------------------------------------------------------------------------------------
def cli_up(state_dir: Path, *, with_turnstile: bool = False) -> int:
    cluster = LocalCluster(state_dir)
    if cluster.load() is not None:
        print(f"a local cluster is already running at {cluster.server} (state in {state_dir}).")
        print(f"  export KUBECONFIG={cluster.kubeconfig}")
        print("Stop it with `turnstile cluster down` before starting another.")
        return 0
    try:
        state = cluster.start()
    except ClusterError as exc:
        print(f"turnstile cluster up: {exc}", file=sys.stderr)
        return 1
    if with_turnstile:
        from webhook.localturnstile import LocalTurnstile

        local = LocalTurnstile(cluster, state_dir / "turnstile")
        try:
            local.start()
        except ClusterError as exc:
            print(f"turnstile cluster up: {exc}", file=sys.stderr)
            cluster.stop()
            return 1
        assert local.process is not None
        cluster.adopt("turnstile", local.process.pid)
        print(
            f"Turnstile runs in front of it: webhooks on https://127.0.0.1:{local.port}, metrics on {local.metrics_url}"
        )
    print(f"kube-apiserver is ready at {state.server}; etcd at 127.0.0.1:{state.etcd_port}.")
    print(f"Processes: {', '.join(f'{n} (pid {p})' for n, p in state.pids.items())}; logs in {state_dir}/logs/.")
    print("Use it with:")
    print(f"  export KUBECONFIG={cluster.kubeconfig}")
    print(f"  {state.bin_dir}/kubectl get clusterqueues")
    print("Stop it with: turnstile cluster down")
    return 0


def cli_down(state_dir: Path) -> int:
    cluster = LocalCluster(state_dir)
    running = cluster.load()
    if running is None and not state_dir.exists():
        print(f"no local cluster in {state_dir}.")
        return 0
    cluster.stop()
    print(f"stopped the local cluster and removed {state_dir}.")
    return 0


def cli_status(state_dir: Path) -> int:
    cluster = LocalCluster(state_dir)
    state = cluster.load()
    if state is None:
        print(f"no local cluster is running from {state_dir}.")
        return 1
    print(f"running at {state.server}: {', '.join(f'{n} (pid {p})' for n, p in state.pids.items())}")
    print(f"  export KUBECONFIG={cluster.kubeconfig}")
    return 0
