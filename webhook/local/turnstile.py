"""Turnstile running as a process on this machine, in front of a ``LocalCluster``'s API server.

Backs ``turnstile cluster up --with-turnstile`` (the demo) and the end-to-end tests: writes a webhook serving
certificate for 127.0.0.1, a kubeconfig with Turnstile's own identity, a configuration file; starts
``turnstile run``; registers the webhook configurations, and the conversion webhook of the CRDs that need one,
with a url-based clientConfig and the caBundle; and waits until the API server really calls them (a dry-run Job
comes back suspended, a dry-run v1beta1 LocalQueue is converted). For ``cluster up`` it runs under a supervisor
that starts it again when it exits; the tests run it bare, so that they decide when it dies and comes back.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from webhook.admission.conversionconfig import CONVERTED_CRDS, conversion_patch
from webhook.admission.registration import (
    default_namespace_selector,
    namespace_selector_for,
    render_webhook_configurations,
)
from webhook.config import parse_config
from webhook.local.client import ApiError, LocalClient
from webhook.local.cluster import ClusterError, LocalCluster, free_port
from webhook.tls import issue_webhook_certificates
from webhook.visibility import registration as visibility_registration

IDENTITY = "turnstile-controller"
PROBE_NAMESPACE = "turnstile-probe"


class LocalTurnstile:
    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        *,
        config: dict[str, Any] | None = None,
        python_args: tuple[str, ...] = (),
        kubeconfig: Path | None = None,
        visibility: bool | None = None,
        supervise: bool = False,
    ) -> None:
        """``python_args`` go between the interpreter and ``-m webhook``, e.g. ``("-m", "cProfile", "-o", f)``;
        ``kubeconfig`` replaces Turnstile's default identity (a client certificate in ``system:masters``).
        ``visibility``: serve and register the visibility API; by default only with the default identity, as the
        manifests grant its delegation rights (auth-delegator, the authentication ConfigMap) only with
        manifests/visibility. ``supervise`` runs it under ``webhook.local.supervise``, which starts it again
        whenever it exits (then ``process`` is the supervisor's)."""
        self._supervise = supervise
        self.cluster = cluster
        self._kubeconfig = kubeconfig
        self._python_args = python_args
        self.workdir = workdir.resolve()
        self.port = free_port()
        self.metrics_port = free_port()
        self.visibility_port = free_port()
        self.visibility = kubeconfig is None if visibility is None else visibility
        self._serves_visibility = False  # the process this object started listens for the visibility API
        self._config = {
            "namespace": "turnstile-system",
            "reconcilerUsers": [IDENTITY],
            "leaderElection": {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s"},
        } | (config or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.ca_pem = b""  # the CA of the serving certificate of the last start
        self._conversion_probed = False  # a v1beta1 dry run went through our /convert since the last patch

    @property
    def log_file(self) -> Path:
        return self.workdir / "turnstile.log"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def start(self, *, timeout: float = 60.0, register: bool = True) -> None:
        """Starts the process and waits until it is ready; ``register=False`` for a replica that serves and elects
        but is not the one the webhook configurations point at (only one URL can be registered)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        namespace = str(self._config["namespace"])
        # The aggregation layer checks the visibility listener's certificate against its Service's name.
        hosts = ["127.0.0.1", "localhost", f"{visibility_registration.SERVICE}.{namespace}.svc"]
        certs = issue_webhook_certificates(self.workdir / "certs", hosts)
        kubeconfig = self._kubeconfig or self.cluster.client_kubeconfig(IDENTITY, ("system:masters",))
        config_file = self.workdir / "config.yaml"
        config_file.write_text(yaml.safe_dump(self._config))
        self.cluster.kubectl("create", "namespace", str(self._config["namespace"]), check=False)
        log = self.log_file.open("ab")
        supervisor = [sys.executable, "-m", "webhook.local.supervise", "--"] if self._supervise else []
        self.process = subprocess.Popen(
            [
                *supervisor,
                sys.executable,
                *self._python_args,
                "-m",
                "webhook",
                "run",
                f"--config={config_file}",
                f"--tls-cert={certs.cert_file}",
                f"--tls-key={certs.key_file}",
                f"--kubeconfig={kubeconfig}",
                "--host=127.0.0.1",
                f"--port={self.port}",
                f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
                *([f"--visibility-bind-address=127.0.0.1:{self.visibility_port}"] if self.visibility else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=os.environ | {"PYTHONUNBUFFERED": "1"},
        )
        log.close()
        # A start that fails (or is interrupted: a test's timeout) leaves no process behind: nobody else holds it.
        try:
            self._serves_visibility = self.visibility
            self.ca_pem = certs.ca_pem
            if register:
                # Before readiness: the cache sync it waits for may itself need conversion (objects stored as v1beta1).
                self.register_conversion(certs.ca_pem)
            self._wait_ready(certs.ca_pem, timeout)
            if register:
                self._apply_webhook_configurations(certs.ca_pem)
                # A restart keeps the port and the CA: when the APIServices already point here, nothing is applied and
                # nothing waits for the aggregator to probe again (the webhooks matter during a restart).
                fresh = not self._visibility_points_here(certs.ca_pem)
                if fresh:
                    self.register_visibility(certs.ca_pem)
                self._wait_effective(timeout)
                if fresh:
                    self._wait_visibility(timeout)
        except BaseException:
            self.stop()
            raise

    def register(self, ca_pem: bytes | None = None, *, timeout: float | None = None) -> None:
        """Points the webhook configurations and the CRDs' conversion webhook at this process (with ``timeout``:
        and waits until they take effect)."""
        ca_pem = ca_pem if ca_pem is not None else self.ca_pem
        self._apply_webhook_configurations(ca_pem)
        self.register_conversion(ca_pem)
        self.register_visibility(ca_pem)
        if timeout is not None:
            self._wait_effective(timeout)

    def _apply_webhook_configurations(self, ca_pem: bytes) -> None:
        own = str(self._config["namespace"])
        # Rendered from the configuration, as the manifests are: its integrations and namespace policy.
        config = parse_config(self._config)
        mutating, validating = render_webhook_configurations(
            ca_bundle=ca_pem,
            url=f"https://127.0.0.1:{self.port}",
            namespace_selector=default_namespace_selector(own),
            workload_namespace_selector=namespace_selector_for(config.namespace_policy()),
            frameworks=frozenset(config.frameworks),
            manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
        )
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(mutating))
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(validating))

    def register_conversion(self, ca_pem: bytes, *, force: bool = False) -> None:
        """Points the conversion webhook of the CRDs whose versions differ at this process. A restart keeps the
        port and the CA, so one read usually shows there is nothing to patch (unless ``force``)."""
        wanted = conversion_patch(ca_bundle=ca_pem, url=f"https://127.0.0.1:{self.port}")
        client = wanted["spec"]["conversion"]["webhook"]["clientConfig"]
        api = LocalClient(self.cluster)  # direct calls: this runs on every (re)start and takeover, kubectl is slow
        try:
            paths = [f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}" for crd in CONVERTED_CRDS]
            if not force:
                current = [api.get(p)["spec"].get("conversion", {}).get("webhook", {}) for p in paths]
                if all(
                    (c.get("clientConfig", {}).get("url"), c.get("clientConfig", {}).get("caBundle"))
                    == (client["url"], client["caBundle"])
                    for c in current
                ):
                    return
            for path in paths:
                api.merge_patch(path, wanted)
        finally:
            api.close()
        self._conversion_probed = False

    def unregister(self) -> None:
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            self.cluster.kubectl("delete", kind, "turnstile", "--ignore-not-found", check=False)
        names = [f"apiservice/{v}.{visibility_registration.GROUP}" for v in visibility_registration.VERSIONS]
        self.cluster.kubectl("delete", *names, "--ignore-not-found", check=False)

    def register_visibility(self, ca_pem: bytes) -> None:
        """The visibility API behind the API server's aggregation layer: an ExternalName Service naming this host
        (Endpoints may not hold loopback addresses) and one APIService per version, trusting our CA."""
        if not self._serves_visibility:
            return
        namespace = str(self._config["namespace"])
        objects = [
            visibility_registration.external_name_service(namespace=namespace, port=self.visibility_port),
            *visibility_registration.api_services(
                namespace=namespace,
                service=visibility_registration.SERVICE,
                port=self.visibility_port,
                ca_bundle=ca_pem,
            ),
        ]
        listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=listed)

    def _visibility_points_here(self, ca_pem: bytes) -> bool:
        """Both APIServices name this process's port and CA (one read each; a restart usually finds them so)."""
        if not self._serves_visibility:
            return True
        wanted = base64.b64encode(ca_pem).decode()
        api = LocalClient(self.cluster)
        try:
            for version in visibility_registration.VERSIONS:
                path = f"/apis/apiregistration.k8s.io/v1/apiservices/{version}.{visibility_registration.GROUP}"
                spec = api.get(path).get("spec") or {}
                if (spec.get("service") or {}).get("port") != self.visibility_port or spec.get("caBundle") != wanted:
                    return False
        except (ApiError, OSError):
            return False
        finally:
            api.close()
        return True

    def _wait_visibility(self, timeout: float) -> None:
        """Until the aggregation layer reaches us: its availability check passed and discovery answers."""
        if not self._serves_visibility:
            return
        path = f"/apis/{visibility_registration.GROUP}/{visibility_registration.VERSIONS[0]}"
        api = LocalClient(self.cluster)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                with contextlib.suppress(ApiError, OSError):
                    if api.get(path).get("groupVersion"):
                        return
                time.sleep(0.3)
        finally:
            api.close()
        raise ClusterError(
            f"the API server did not reach the visibility API within {timeout:.0f}s; see {self.log_file}"
        )

    def kill(self) -> None:
        """SIGKILL, as a crashed replica: no lease release, no cleanup."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def metrics(self) -> str:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:
            return str(response.read().decode())

    def _wait_ready(self, ca_pem: bytes, timeout: float) -> None:
        context = ssl.create_default_context(cadata=ca_pem.decode())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ClusterError(f"turnstile exited with {self.process.returncode}; see {self.log_file}")
            url = f"https://127.0.0.1:{self.port}/readyz"
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(url, timeout=2, context=context) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.2)
        raise ClusterError(f"turnstile was not ready within {timeout:.0f}s; see {self.log_file}")

    def _wait_effective(self, timeout: float) -> None:
        """The API server picks up webhook configurations asynchronously: probe until a Job is mutated, and (once
        per conversion patch) until a v1beta1 LocalQueue, which is stored only once /convert answers, dry-runs."""
        self.cluster.kubectl("create", "namespace", PROBE_NAMESPACE, check=False)
        probe = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "probe", "namespace": PROBE_NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "x"}},
            "spec": {
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
                }
            },
        }
        converted = {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": "probe", "namespace": PROBE_NAMESPACE},
            "spec": {"clusterQueue": "probe"},
        }
        lq_path = f"/apis/kueue.x-k8s.io/v1beta1/namespaces/{PROBE_NAMESPACE}/localqueues?dryRun=All"
        deadline = time.monotonic() + timeout
        mutated = False
        api = LocalClient(self.cluster)
        try:
            while time.monotonic() < deadline:
                if not mutated:
                    done = self.cluster.kubectl(
                        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(probe), check=False
                    )
                    mutated = done.returncode == 0 and json.loads(done.stdout)["spec"].get("suspend") is True
                if mutated and not self._conversion_probed:
                    with contextlib.suppress(ApiError, OSError):
                        api.create(lq_path, converted)
                        self._conversion_probed = True
                if mutated and self._conversion_probed:
                    return
                time.sleep(0.3)
        finally:
            api.close()
        raise ClusterError(f"the API server did not call the webhook within {timeout:.0f}s; see {self.log_file}")
