"""``turnstile run``: one process, two roles.

Every replica watches the cluster into one cache and serves the admission webhooks from it. One replica, the
holder of the Lease, also runs the reconciler. Losing the Lease stops the process (its replacement starts
clean and rebuilds from the API server), which is simpler and safer than trying to stop half-done writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from webhook.config import Config, ConfigError, load_config
from webhook.controller.events import EventRecorder
from webhook.controller.leader import LeaderElector, LeaseConfig
from webhook.controller.reconciler import Reconciler
from webhook.controller.supervisor import Supervisor
from webhook.controller.watches import build_cache, start_watches, watch_specs
from webhook.kube.apiserver import ApiServerKube
from webhook.metrics import Metrics, serving
from webhook.server import AdmissionServer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    config: Config
    cert_file: Path
    key_file: Path
    kubeconfig: Path | None = None
    host: str = ""
    port: int = 9443
    metrics_host: str = ""
    metrics_port: int | None = 8080  # None: no metrics endpoint
    reconcile: bool = True  # False: webhook only (`turnstile serve`)
    visibility_host: str = ""
    visibility_port: int | None = None  # None: no visibility API listener
    identity: str = ""


def _split_address(address: str) -> tuple[str, int | None]:
    if not address or address == "0":
        return "", None
    host, _, port = address.rpartition(":")
    return host, int(port)


async def run(options: RunOptions, *, stop: asyncio.Event) -> None:
    config = options.config
    identity = options.identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    metrics = Metrics(replica_role="follower" if options.reconcile else "standalone")
    async with contextlib.AsyncExitStack() as stack:
        kube = await stack.enter_async_context(
            ApiServerKube(kubeconfig=options.kubeconfig, in_cluster=options.kubeconfig is None)
        )
        supervisor = await stack.enter_async_context(Supervisor())
        specs = watch_specs(config.frameworks)  # only the enabled job kinds are watched
        cache = build_cache(specs)
        start_watches(kube, cache, supervisor, specs=specs)
        server = AdmissionServer(
            view=cache,
            options=config.admission_options(),
            cert_file=options.cert_file,
            key_file=options.key_file,
            host=options.host,
            port=options.port,
            observe=metrics.observe_webhook,
        )
        await server.start()
        stack.push_async_callback(server.close)
        if options.metrics_port is not None:
            port = await stack.enter_async_context(
                serving(metrics, host=options.metrics_host or "0.0.0.0", port=options.metrics_port)
            )
            log.info("metrics on port %d", port)
        log.info("webhook server on port %d", server.port)
        supervisor.spawn(server.run_until(stop), name="webhook-server")
        if options.visibility_port is not None:
            from webhook.visibility.listener import start_visibility

            await start_visibility(
                stack,
                supervisor,
                kube=kube,
                cache=cache,
                cert_file=options.cert_file,
                key_file=options.key_file,
                host=options.visibility_host,
                port=options.visibility_port,
            )

        elector: LeaderElector | None = None
        if options.reconcile:
            lease = config.leader_election
            reconciler = Reconciler(
                kube,
                cache,
                namespaces=config.namespace_policy(),
                metrics=metrics,
                events=EventRecorder(kube, host=identity),
                wait_for_pods_ready=config.wait_for_pods_ready,
                manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
                frameworks=config.frameworks,
                fair_sharing=config.fair_sharing,
                admission_fair_sharing=config.admission_fair_sharing,
            )
            if lease.leader_elect:
                elector = LeaderElector(
                    kube,
                    LeaseConfig(
                        namespace=config.namespace,
                        name=lease.resource_name,
                        lease_duration=lease.lease_duration_seconds,
                        renew_deadline=lease.renew_deadline_seconds,
                        retry_period=lease.retry_period_seconds,
                    ),
                    identity=identity,
                )
                supervisor.spawn(_lead(elector, reconciler, metrics, supervisor), name="leader-election")
            else:
                metrics.set_replica_role("leader")
                supervisor.spawn(reconciler.run(), name="reconciler")

        stopping = asyncio.create_task(stop.wait(), name="stop-signal")
        crashed = asyncio.create_task(supervisor.wait(), name="supervisor")
        done, _ = await asyncio.wait({stopping, crashed}, return_when=asyncio.FIRST_COMPLETED)
        for task in (stopping, crashed):
            task.cancel()
        if elector is not None:
            await elector.release()
        if crashed in done:
            crashed.result()  # re-raises the crash of a supervised task


async def _lead(elector: LeaderElector, reconciler: Reconciler, metrics: Metrics, supervisor: Supervisor) -> None:
    await elector.acquire()
    metrics.set_replica_role("leader")
    supervisor.spawn(reconciler.run(), name="reconciler")
    await elector.hold()  # raises LostLeadership, which stops the process


def run_from_cli(
    *,
    config_file: Path | None,
    cert_file: Path | None,
    key_file: Path | None,
    kubeconfig: Path | None,
    host: str | None,
    port: int | None,
    metrics_address: str | None,
    reconcile: bool,
    visibility_address: str | None = None,
    json_logs: bool,
) -> int:
    """``turnstile run`` / ``turnstile serve``: configuration, then serve until SIGINT/SIGTERM."""
    from webhook import logs

    logs.configure(os.environ.get("TURNSTILE_LOG_LEVEL", "INFO"), json=json_logs)
    try:
        config = load_config(config_file)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    cert_dir = Path(config.webhook.cert_dir)
    cert = cert_file or cert_dir / "tls.crt"
    key = key_file or cert_dir / "tls.key"
    for path in (cert, key):
        if not path.exists():
            print(
                f"turnstile: {path} does not exist (run `turnstile certs` or pass --tls-cert/--tls-key)",
                file=sys.stderr,
            )
            return 2
    metrics_host, metrics_port = _split_address(metrics_address or config.metrics.bind_address)
    visibility_host, visibility_port = _split_address(visibility_address or "")
    options = RunOptions(
        config=config,
        cert_file=cert,
        key_file=key,
        kubeconfig=kubeconfig or (Path(os.environ["KUBECONFIG"]) if os.environ.get("KUBECONFIG") else None),
        host=config.webhook.host if host is None else host,
        port=config.webhook.port if port is None else port,
        metrics_host=metrics_host,
        metrics_port=metrics_port,
        reconcile=reconcile,
        visibility_host=visibility_host,
        visibility_port=visibility_port,
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run(options, stop=stop)

    try:
        asyncio.run(main())
    except Exception as exc:  # the process's last word: one line, then a non-zero exit
        log.critical("turnstile stopped: %s", exc, exc_info=True)
        return 1
    return 0
