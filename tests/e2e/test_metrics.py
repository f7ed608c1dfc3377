"""The metrics endpoint during an end-to-end run: its counts match what the API server says."""

from __future__ import annotations

import re

import pytest

from tests.e2e.kube import apply, cluster_queue, create, eventually, flavor, items, job, local_queue
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration


def _sample(text: str, name: str, **labels: str) -> float | None:
    """The sum over every series of ``name`` with these labels (e.g. both replica_role values), None if none."""
    values = []
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            values.append(float(line.rsplit(" ", 1)[1]))
    return sum(values) if values else None


def test_metrics_match_the_api(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    cq = f"cq-{namespace}"
    apply(
        cluster,
        flavor("metrics-flavor"),
        cluster_queue(cq, flavors={"metrics-flavor": {"cpu": "2"}}),
        local_queue(namespace, "q", cq),
    )
    for name in ("m1", "m2", "m3"):
        create(cluster, job(namespace, name, queue="q", requests={"cpu": "1"}))

    def counts() -> tuple[int, int]:
        workloads = items(cluster, "workloads.kueue.x-k8s.io", namespace)
        admitted = sum(1 for w in workloads if (w.get("status") or {}).get("admission"))
        return admitted, len(workloads) - admitted

    eventually(lambda: counts() == (2, 1), what="two admitted and one pending Workload in the API")

    def exported() -> tuple[float | None, float | None]:
        text = turnstile.metrics()
        return (
            _sample(text, "kueue_admitted_active_workloads", cluster_queue=cq),
            _sample(text, "kueue_pending_workloads", cluster_queue=cq, status="active"),
        )

    eventually(lambda: exported() == (2.0, 1.0), what="metrics to show 2 admitted and 1 pending", timeout=20)
    text = turnstile.metrics()
    assert (_sample(text, "kueue_cluster_queue_nominal_quota", cluster_queue=cq, resource="cpu") or 0) == 2.0
    assert (_sample(text, "kueue_cluster_queue_resource_usage", cluster_queue=cq, resource="cpu") or 0) == 2.0
    assert (_sample(text, "turnstile_webhook_requests_total", path="/mutate/batch/v1/jobs", code="200") or 0) >= 3
