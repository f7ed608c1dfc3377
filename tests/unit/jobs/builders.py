"""Builders for the Job, ResourceFlavor and admission objects the job adapters read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from webhook.api.views import ObjectView, Pod, WorkloadRecord

JSON = dict[str, Any]


def make_job(
    name: str = "sample",
    *,
    namespace: str = "team-a",
    uid: str = "uid-1",
    queue: str | None = "user-queue",
    parallelism: int | None = 1,
    completions: int | None = None,
    cpu: str = "1",
    node_selector: dict[str, str] | None = None,
    tolerations: list[JSON] | None = None,
    template_labels: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    suspend: bool = True,
) -> JSON:
    all_labels = dict(labels or {})
    if queue is not None:
        all_labels["kueue.x-k8s.io/queue-name"] = queue
    pod_spec: JSON = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        pod_spec["tolerations"] = list(tolerations)
    spec: JSON = {
        "suspend": suspend,
        "template": {"metadata": {"labels": dict(template_labels)} if template_labels else {}, "spec": pod_spec},
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    metadata: JSON = {"name": name, "namespace": namespace, "uid": uid, "labels": all_labels}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def make_flavor(name: str, *, node_labels: dict[str, str] | None = None, tolerations: list[JSON] | None = None) -> JSON:
    spec: JSON = {}
    if node_labels:
        spec["nodeLabels"] = node_labels
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def make_admission(cluster_queue: str = "cq", **flavors_by_podset: dict[str, str]) -> JSON:
    return {
        "clusterQueue": cluster_queue,
        "podSetAssignments": [
            {"name": name, "flavors": flavors, "count": 1} for name, flavors in flavors_by_podset.items()
        ],
    }


def admitted_with(admission: JSON) -> WorkloadRecord:
    """A Workload whose ``status.admission`` is ``admission`` (what ``podset_infos`` reads of it)."""
    return WorkloadRecord.of({"status": {"admission": admission}})


def flavor_views(*flavors: JSON) -> dict[str, ObjectView]:
    """ResourceFlavors by name, as the reconciler takes them from its cache."""
    return {f["metadata"]["name"]: ObjectView.of(f) for f in flavors}


def pod_views(pods: Iterable[JSON]) -> list[Pod]:
    """Pods as the pod group functions read them (the reconciler takes each view from its cache)."""
    return [Pod.of(pod) for pod in pods]
