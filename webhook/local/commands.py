"""``turnstile cluster up | down | status``: start, stop and describe the local development cluster.

Owns: the user-facing messages of the local cluster and the order of start-up (control plane, then Turnstile).
Must not: be imported by the production packages; it is developer tooling, like the rest of ``webhook.local``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from webhook.local import nodes as localnodes
from webhook.local.cluster import ClusterError, LocalCluster
from webhook.local.turnstile import LocalTurnstile


def cli_up(state_dir: Path, *, with_turnstile: bool = False, nodes: str = localnodes.NO_NODES) -> int:
    """``nodes``: a node profile (name in hack/nodes/ or path) or ``none`` for the bare control plane."""
    try:
        profile = localnodes.resolve(nodes)
    except localnodes.NodeProfileError as exc:
        print(f"turnstile cluster up --nodes: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    cluster = LocalCluster(state_dir, nodes=profile)
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
    ready_after = time.monotonic() - started
    if with_turnstile:
        local = LocalTurnstile(cluster, state_dir / "turnstile", supervise=True)  # restarted if it ever exits
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
        print(
            f"Kueue's visibility API, aggregated (Turnstile on port {local.visibility_port}):"
            " kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/<name>/pendingworkloads"
        )
    print(f"kube-apiserver is ready at {state.server}; etcd at 127.0.0.1:{state.etcd_port}.")
    if state.nodes:
        print(
            f"{len(state.nodes)} simulated nodes Ready (kwok, profile {state.node_profile}): {', '.join(state.nodes)};"
            f" kube-scheduler places the pods. Cluster ready in {ready_after:.1f}s."
        )
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
    if state.nodes:
        print(f"  {len(state.nodes)} simulated nodes from {state.node_profile}: {', '.join(state.nodes)}")
    print(f"  export KUBECONFIG={cluster.kubeconfig}")
    return 0
