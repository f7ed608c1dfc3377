"""Turnstile's container image run as its Deployment runs it, in front of the test cluster, without a daemon.

``buildah run --isolation chroot`` starts the image's entrypoint with the Deployment's arguments on the host's
network, as user 65532, with the in-cluster credentials a pod gets (a ServiceAccount token mounted at
``/var/run/secrets/kubernetes.io/serviceaccount`` and ``KUBERNETES_SERVICE_HOST``/``PORT``), the configuration
and serving certificate mounted read-only where the manifests mount them, a tmpfs at ``/tmp`` (the emptyDir),
and the image's own directories read-only (``readOnlyRootFilesystem``). Certificates, webhook registration and
the readiness waits are ``LocalTurnstile``'s: only the process differs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from webhook.local.cluster import ClusterError, LocalCluster
from webhook.local.turnstile import LocalTurnstile
from webhook.tls import issue_webhook_certificates

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# /var/run is a symlink to /run in the image: the mount point is made (and mounted) at its real path.
SERVICE_ACCOUNT_REAL_DIR = "/run/secrets/kubernetes.io/serviceaccount"
READ_ONLY_DIRS = ("usr", "opt", "etc", "var", "root", "home", "srv", "media", "mnt", "boot")


def buildah(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise ClusterError(f"buildah {' '.join(args)}: {done.stderr.strip()}")
    return done


def image_config(image: str) -> dict[str, Any]:
    """The image's OCI configuration (Entrypoint, Cmd, User, Labels, ...)."""
    inspected = json.loads(buildah("inspect", "--type", "image", image).stdout)
    config: dict[str, Any] = inspected["OCIv1"]["config"]
    return config


class ImageTurnstile(LocalTurnstile):
    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        *,
        image: str,
        deployment: dict[str, Any],
        config: dict[str, Any],
        token: str,
        hostname: str = "turnstile-image",
    ) -> None:
        """``deployment`` is the rendered Deployment (its command and args are run), ``config`` the
        Configuration it mounts, ``token`` the ServiceAccount token the pod would be given."""
        super().__init__(cluster, workdir, config=config)
        self.image = image
        self.hostname = hostname
        self._deployment = deployment
        self._token = token
        self._config = config | {
            "webhook": config.get("webhook", {}) | {"host": "127.0.0.1", "port": self.port},
            "metrics": {"bindAddress": f"127.0.0.1:{self.metrics_port}"},
        }
        self.container = ""
        self._mount_args: list[str] = []
        self._log: Any = None

    def prepare(self) -> None:
        """A working container from the image, and the files its mounts show; done once."""
        if self.container:
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.container = buildah("from", "--pull=never", self.image).stdout.strip().splitlines()[-1]
        self._mount_args = self._mounts()

    def _mounts(self) -> list[str]:
        """Files as the kubelet lays them out: world-readable (a Secret's default mode), owned by root."""
        certs = issue_webhook_certificates(self.workdir / "certs", ["127.0.0.1", "localhost"])
        self.ca_pem = certs.ca_pem
        tls = self.workdir / "volumes" / "webhook-tls"
        tls.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(certs.cert_file, tls / "tls.crt")
        shutil.copyfile(certs.key_file, tls / "tls.key")
        sa = self.workdir / "volumes" / "serviceaccount"
        sa.mkdir(parents=True, exist_ok=True)
        (sa / "token").write_text(self._token)
        (sa / "ca.crt").write_bytes(self.cluster.ca_pem)
        (sa / "namespace").write_text(str(self._config["namespace"]))
        config_file = self.workdir / "volumes" / "config.yaml"
        config_file.write_text(yaml.safe_dump(self._config))
        for path in (self.workdir / "volumes", tls, sa, *tls.iterdir(), *sa.iterdir(), config_file):
            path.chmod(0o755 if path.is_dir() else 0o644)

        [container] = self._deployment["spec"]["template"]["spec"]["containers"]
        volumes = {m["name"]: m for m in container["volumeMounts"]}
        config_mount = volumes["config"]["mountPath"]
        tls_mount = volumes["webhook-tls"]["mountPath"]
        # Mount points inside the read-only directories must exist before those are made read-only.
        root = Path(buildah("mount", self.container).stdout.strip())
        (root / tls_mount.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (root / config_mount.lstrip("/")).touch()
        (root / SERVICE_ACCOUNT_REAL_DIR.lstrip("/")).mkdir(parents=True, exist_ok=True)
        real_dirs = [d for d in READ_ONLY_DIRS if (root / d).is_dir() and not (root / d).is_symlink()]
        views = [f"--volume={root / d}:/{d}:ro" for d in real_dirs]
        return [
            *views,
            "--mount=type=tmpfs,destination=/tmp",
            f"--volume={config_file}:{config_mount}:ro",
            f"--volume={tls}:{tls_mount}:ro",
            f"--volume={sa}:{SERVICE_ACCOUNT_REAL_DIR}:ro",
        ]

    def run_in_image(self, *command: str, user: str = "65532:65532") -> subprocess.CompletedProcess[str]:
        """A one-off command in the same view as the process (for checks of the view itself)."""
        self.prepare()
        return buildah(
            "run", "--isolation=chroot", "--network=host", f"--user={user}", *self._mount_args, self.container,
            "--", *command, check=False,
        )  # fmt: skip

    def start(self, *, timeout: float = 90.0, register: bool = True) -> None:
        self.prepare()
        mounts = self._mount_args
        [container] = self._deployment["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value", "") for e in container.get("env", []) if "value" in e}
        env |= {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": self.cluster.server.rsplit(":", 1)[1],
            "POD_NAME": self.hostname,
            "POD_NAMESPACE": str(self._config["namespace"]),
        }
        security = self._deployment["spec"]["template"]["spec"]["securityContext"]
        user = f"{security['runAsUser']}:{security['runAsGroup']}"
        self._log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            [
                "buildah", "run", "--isolation=chroot", "--network=host", f"--hostname={self.hostname}",
                f"--user={user}", *[f"--env={k}={v}" for k, v in env.items()], *mounts, self.container, "--",
                *container["command"], *container["args"],
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        self._wait_ready(self.ca_pem, timeout)
        if register:
            self.register(self.ca_pem)
            self._wait_effective(timeout)

    def _descendants(self) -> list[tuple[int, bytes]]:
        """(pid, command line) of every process under buildah, parents first."""
        assert self.process is not None
        found: list[tuple[int, bytes]] = []
        pending = [self.process.pid]
        while pending:
            pid = pending.pop(0)
            # buildah is a Go program: a child is listed under whichever of its threads forked it.
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    children = [int(c) for c in (task / "children").read_text().split()]
                except OSError:
                    continue
                for child in children:
                    try:
                        found.append((child, Path(f"/proc/{child}/cmdline").read_bytes()))
                    except OSError:
                        continue
                    pending.append(child)
        return found

    def stop(self) -> None:
        """SIGTERM to the containerised process itself: buildah does not pass it on, it kills its child."""
        if self.process is not None and self.process.poll() is None:
            [container] = self._deployment["spec"]["template"]["spec"]["containers"]
            entrypoint = container["command"][0].encode()
            tree = self._descendants()
            # Not buildah's own helpers (buildah-chroot-exec carries the command in its arguments too).
            targets = [pid for pid, cmd in tree if not cmd.startswith(b"buildah") and entrypoint in cmd]
            for pid in targets:
                os.kill(pid, signal.SIGTERM)
            started = time.monotonic()
            try:
                self.process.wait(timeout=30)
                with self.log_file.open("a") as log:
                    log.write(f"[test] stopped {time.monotonic() - started:.1f} s after SIGTERM to {targets}\n")
            except subprocess.TimeoutExpired:
                with self.log_file.open("a") as log:
                    log.write(f"[test] not stopped 30 s after SIGTERM to {targets}; processes: {tree}; SIGKILL\n")
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def remove(self) -> None:
        if self.container:
            buildah("umount", self.container, check=False)
            buildah("rm", self.container, check=False)
            self.container = ""
