"""A real local control plane: etcd + kube-apiserver (+ kube-controller-manager when built) on loopback.

Backs ``turnstile cluster up|down|status`` and the integration tests' session fixture. With a node profile
(``webhook.local.nodes``) it also runs kube-scheduler and kwok and creates simulated nodes, so that pods are
placed and run. The binaries are built from Go modules by ``hack/build-control-plane.sh`` and
``hack/build-kwok.sh`` into caches outside the repository; this module only starts and stops them. Everything
a cluster owns (certificates, etcd data, logs, kubeconfig, pids) lives in one state directory, so ``down`` is
"kill the recorded processes and remove the directory".
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
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from webhook import pki
from webhook.local import nodes as localnodes

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "manifests" / "crds"
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-control-plane.sh"
KWOK_BUILD_SCRIPT = REPO_ROOT / "hack" / "build-kwok.sh"
SCHEDULER_USER = "system:kube-scheduler"  # the identity the default RBAC policy grants what the scheduler needs
# The aggregation layer's client identity towards aggregated API servers (Turnstile's visibility API); its CA is
# separate from the cluster's so no ordinary client certificate can pose as the front proxy.
FRONT_PROXY_CLIENT = "front-proxy-client"
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


def find_kwok_dir() -> Path:
    """The directory holding kwok (its own cache, apart from the control plane's), building it when cold."""
    configured = os.environ.get("TURNSTILE_KWOK_DIR")
    if configured:
        path = Path(configured)
        if not (path / "kwok").exists():
            raise ClusterError(f"TURNSTILE_KWOK_DIR={path} holds no kwok; run `make controlplane`")
        return path
    done = subprocess.run(["bash", str(KWOK_BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise ClusterError(f"{KWOK_BUILD_SCRIPT} failed with exit code {done.returncode}; see its output above")
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
    # So does someone else's zombie: processes of a cluster started by an earlier `cluster up` belong to init,
    # which may reap them only seconds later (about 2 s on this machine: ~12 s of waiting for one `cluster down`).
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ")".
    return stat[stat.rindex(")") + 2 :].startswith("Z")


@dataclass
class ClusterState:
    """What ``down`` and ``status`` need to find a running cluster again; saved as JSON in the state dir."""

    bin_dir: str
    etcd_port: int
    api_port: int
    pids: dict[str, int] = field(default_factory=dict)
    node_profile: str = ""  # the profile file the simulated nodes come from; "" for none
    nodes: list[str] = field(default_factory=list)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"


class LocalCluster:
    """One control plane rooted in ``state_dir``."""

    def __init__(
        self,
        state_dir: Path,
        *,
        bin_dir: Path | None = None,
        controller_manager: bool = True,
        nodes: Path | None = None,
        crds: Path = CRD_DIR,
    ) -> None:
        """``nodes``: a node profile; with it kube-scheduler and kwok run and its nodes are created. Without it
        (the default) the control plane is bare: no scheduler, no nodes, pods stay unbound. ``crds``: the
        directory of CRDs installed at start (ours; a test of upgrades starts from older ones)."""
        self.state_dir = state_dir.resolve()
        self._bin_dir = bin_dir
        self._want_kcm = controller_manager
        self._node_profile = nodes
        self._crds = crds
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
        binaries = ["etcd", "kube-apiserver", "kubectl"]
        profile = None
        if self._node_profile is not None:
            binaries.append("kube-scheduler")
            try:
                profile = localnodes.load(self._node_profile)
            except localnodes.NodeProfileError as exc:
                raise ClusterError(str(exc)) from exc
        for binary in binaries:
            if not (bin_dir / binary).exists():
                raise ClusterError(f"{bin_dir / binary} is missing; run `make controlplane`")
        kwok = find_kwok_dir() / "kwok" if profile is not None else None
        shutil.rmtree(self.state_dir, ignore_errors=True)
        (self.state_dir / "logs").mkdir(parents=True)
        self.state = ClusterState(bin_dir=str(bin_dir), etcd_port=free_port(), api_port=free_port())
        try:
            self._write_pki()
            self._start_etcd(timeout)
            self._start_apiserver(timeout)
            self._write_kubeconfig()
            if self._want_kcm and (bin_dir / "kube-controller-manager").exists():
                self._start_controller_manager(nodes=profile is not None)
            if profile is not None and kwok is not None:
                # Started before the CRDs are installed: they boot while the API server establishes them.
                scheduler_port = self._start_scheduler()
                self._start_kwok(kwok)
                self._create_nodes(profile)
            self.install_crds(directory=self._crds, timeout=timeout)
            if profile is not None:
                self._wait("kube-scheduler", timeout, lambda: _http_ok(f"https://127.0.0.1:{scheduler_port}/healthz"))
                self._wait("kwok", timeout, lambda: self._nodes_ready(profile.node_names()))
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
        front_proxy_ca = pki.new_ca("turnstile-local-front-proxy-ca")
        front_proxy_ca.write(self.pki_dir / "front-proxy-ca.crt", self.pki_dir / "front-proxy-ca.key")
        pki.new_client_cert(front_proxy_ca, FRONT_PROXY_CLIENT).write(
            self.pki_dir / "front-proxy-client.crt", self.pki_dir / "front-proxy-client.key"
        )
        key = self.pki_dir / "sa.key"
        key.write_bytes(pki.new_private_key_pem())
        key.chmod(0o600)

    def _spawn(self, name: str, args: list[str], *, binary: Path | None = None) -> None:
        assert self.state is not None
        log = (self.state_dir / "logs" / f"{name}.log").open("ab")
        # A session of its own: the processes outlive `turnstile cluster up` and ignore the terminal's ^C.
        proc = subprocess.Popen(
            [str(binary or self.bin_dir / name), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self._procs[name] = proc
        self.state.pids[name] = proc.pid
        (self.state_dir / STATE_FILE).write_text(json.dumps(asdict(self.state), indent=2))

    def _start_etcd(self, timeout: float, attempts: int = 3) -> None:
        # free_port() closes the port it found, so another process (a second pytest worker starting its own cluster)
        # can be handed the same one before etcd binds it. Our etcd then exits, but the other one answers /health,
        # and our API server would store into the other cluster. So etcd is ready only when the member answering is
        # ours (named for this start), and a lost race starts again on fresh ports.
        assert self.state is not None
        for attempt in range(1, attempts + 1):
            member = f"turnstile-{os.urandom(4).hex()}"
            client = f"http://127.0.0.1:{self.state.etcd_port}"
            shutil.rmtree(self.state_dir / "etcd", ignore_errors=True)
            self._spawn(
                "etcd",
                [
                    f"--name={member}",
                    f"--data-dir={self.state_dir / 'etcd'}",
                    f"--listen-client-urls={client}",
                    f"--advertise-client-urls={client}",
                    f"--listen-peer-urls=http://127.0.0.1:{free_port()}",
                    "--unsafe-no-fsync=true",
                    "--quota-backend-bytes=4294967296",
                    "--log-level=warn",
                ],
            )
            try:
                self._wait("etcd", timeout, lambda: _etcd_members(client) == [member])  # noqa: B023
                return
            except ClusterError:
                proc = self._procs.pop("etcd", None)
                _terminate(self.state.pids.pop("etcd"), proc)
                if attempt == attempts:
                    raise
                self.state.etcd_port = free_port()

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
                # The aggregation layer (APIService objects, e.g. Turnstile's visibility API): the client certificate
                # it presents to aggregated servers and the request headers that carry the user. It publishes these
                # in kube-system/extension-apiserver-authentication, where an aggregated server reads them. It routes
                # to a Service's address, so locally an ExternalName Service naming the loopback host is used
                # (Endpoints may not hold loopback addresses, which --enable-aggregator-routing would need).
                f"--requestheader-client-ca-file={p / 'front-proxy-ca.crt'}",
                f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={p / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={p / 'front-proxy-client.key'}",
            ],
        )
        context = self._admin_ssl_context()
        self._wait("kube-apiserver", timeout, lambda: _http_ok(f"{self.server}/readyz", context))

    def _start_controller_manager(self, *, nodes: bool) -> None:
        assert self.state is not None
        p = self.pki_dir
        controllers = ["job-controller", "garbage-collector-controller", "namespace-controller"]
        controllers += ["ttl-after-finished-controller", "clusterrole-aggregation"]
        # A CronJob's Jobs and a Deployment's and a StatefulSet's pods are queued like any other (issue 11).
        controllers += ["cronjob-controller", "deployment-controller", "replicaset-controller"]
        controllers.append("statefulset-controller")
        if nodes:
            # As on a real cluster: it lifts the not-ready taint the API server puts on every new Node once kwok
            # reports it Ready, and taints it again if kwok stops renewing its Lease.
            controllers.append("node-lifecycle-controller")
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
                f"--controllers={','.join(controllers)}",
            ],
        )

    def _start_scheduler(self) -> int:
        """kube-scheduler with its own identity (the default RBAC policy's system:kube-scheduler); returns its port."""
        kubeconfig = self.client_kubeconfig(SCHEDULER_USER)
        port = free_port()
        self._spawn(
            "kube-scheduler",
            [
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                # The default (50/s) would make the scheduler, not Turnstile, the bottleneck of bench/e2e.py.
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
            ],
        )
        return port

    def _start_kwok(self, binary: Path) -> None:
        """kwok plays the kubelet of the nodes labelled ``MANAGED_LABEL`` only, as the stages file says."""
        self._spawn(
            "kwok",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--config={localnodes.STAGES_FILE}",
                f"--manage-nodes-with-label-selector={localnodes.MANAGED_LABEL}=true",
                "--cidr=10.244.0.0/16",
                "--node-ip=10.0.0.1",
                "--node-lease-duration-seconds=40",
            ],
            binary=binary,
        )

    def _create_nodes(self, profile: localnodes.NodeProfile) -> None:
        assert self.state is not None
        for node in localnodes.node_objects(profile):
            self._api("POST", "/api/v1/nodes", node)
        self.state.node_profile = profile.source
        self.state.nodes = profile.node_names()
        (self.state_dir / STATE_FILE).write_text(json.dumps(asdict(self.state), indent=2))

    def _nodes_ready(self, names: list[str]) -> bool:
        selector = urllib.parse.quote(f"{localnodes.MANAGED_LABEL}=true")
        try:
            with urllib.request.urlopen(
                f"{self.server}/api/v1/nodes?labelSelector={selector}", timeout=2, context=self._admin_ssl_context()
            ) as response:
                listed = json.load(response)["items"]
        except (urllib.error.URLError, OSError, ValueError):
            return False
        # Ready, and schedulable: the node-lifecycle-controller has lifted the API server's not-ready taint.
        ready = {
            n["metadata"]["name"]
            for n in listed
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in n["status"].get("conditions") or [])
            and not any(t.get("key") == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints") or [])
        }
        return set(names) <= ready

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
        # Written aside and renamed: a replica started at the same moment may be reading the previous one.
        fd, aside = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(config, indent=2))
        os.replace(aside, path)

    def install_crds(self, *, directory: Path = CRD_DIR, timeout: float = 60.0) -> None:
        """Applies every CRD under ``directory`` (ours: manifests/crds/) and waits until the API server serves them."""
        files = sorted(directory.glob("*.yaml")) if directory.exists() else []
        files = [f for f in files if f.name != "kustomization.yaml"]
        # libyaml's loader: the pure-Python one takes 0.4 s over these files.
        crds = [doc for f in files for doc in yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader) if doc]
        # What `kubectl apply --server-side --force-conflicts` sends (same field manager), without two kubectl
        # processes discovering a fresh API server: that took 3 of the 10 seconds `cluster up` may take.
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        for crd in crds:
            path = f"{base}/{crd['metadata']['name']}?fieldManager=kubectl&force=true"
            self._api("PATCH", path, crd, content_type="application/apply-patch+yaml")
        names = {crd["metadata"]["name"] for crd in crds}

        def established() -> bool:
            try:
                listed = self._api("GET", base)["items"]
            except ClusterError:
                return False
            conditions = {c["metadata"]["name"]: (c.get("status") or {}).get("conditions") or [] for c in listed}
            return all(
                any(x.get("type") == "Established" and x.get("status") == "True" for x in conditions.get(n, []))
                for n in names
            )

        self._wait("kube-apiserver", timeout, established)

    def _api(self, method: str, path: str, body: object = None, *, content_type: str = "application/json") -> Any:
        """One call to the API server as the admin; an error status raises ClusterError with the server's words."""
        request = urllib.request.Request(
            self.server + path,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": content_type, "Accept": "application/json"},
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=self._admin_ssl_context()) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise ClusterError(f"{method} {path}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ClusterError(f"{method} {path}: {exc}") from exc

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


def _etcd_members(client: str) -> list[str] | None:
    """The member names of the etcd answering at ``client`` (its gRPC gateway), or None while none answers."""
    request = urllib.request.Request(f"{client}/v3/cluster/member/list", data=b"{}", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            members = json.load(response).get("members") or []
    except (OSError, ValueError):
        return None
    return [str(m.get("name", "")) for m in members]


def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    if context is None and url.startswith("https:"):
        # kube-scheduler serves /healthz with a self-signed certificate it makes at start; only liveness matters.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
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
