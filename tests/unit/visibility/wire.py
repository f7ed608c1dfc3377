"""Wire-shaped queue objects (plain dicts, as the cache holds them) for visibility and fit tests."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def flavor(name: str) -> JSON:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


def cluster_queue(name: str, quotas: dict[str, dict[str, str]], *, strategy: str = "BestEffortFIFO") -> JSON:
    resources = sorted({r for q in quotas.values() for r in q})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": strategy,
            "resourceGroups": [
                {
                    "coveredResources": resources,
                    "flavors": [
                        {"name": f, "resources": [{"name": r, "nominalQuota": q.get(r, "0")} for r in resources]}
                        for f, q in quotas.items()
                    ],
                }
            ],
        },
    }


def local_queue(namespace: str, name: str, cq: str) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterQueue": cq},
    }


def workload(
    namespace: str,
    name: str,
    *,
    queue: str,
    cpu: str = "1",
    count: int = 1,
    priority: int = 0,
    created: str = "2026-01-01T00:00:00Z",
    admitted_to: str | None = None,
    flavor: str = "default",
) -> JSON:
    status: JSON = {}
    if admitted_to is not None:
        status = {
            "admission": {
                "clusterQueue": admitted_to,
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": cpu}, "count": count}
                ],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "",
                    "lastTransitionTime": created,
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "",
                    "lastTransitionTime": created,
                },
            ],
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": f"uid-{namespace}-{name}",
            "resourceVersion": "1",
            "creationTimestamp": created,
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": f"job-{name}", "controller": True}
            ],
        },
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
                }
            ],
        },
        "status": status,
    }
