"""Builders and small helpers for end-to-end tests: objects as dicts; Jobs created with kubectl, the user's tool;
reads, polls, applies and patches through tests.kubeapi (the same requests without a kubectl process each)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from tests.kubeapi import api
from webhook.jobs.naming import job_workload_name
from webhook.local.cluster import LocalCluster

JSON = dict[str, Any]


def flavor(name: str, *, node_labels: dict[str, str] | None = None, tolerations: list[JSON] | None = None) -> JSON:
    spec: JSON = {}
    if node_labels:
        spec["nodeLabels"] = node_labels
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(
    name: str,
    *,
    flavors: dict[str, dict[str, str]],
    cohort: str | None = None,
    strategy: str = "BestEffortFIFO",
    preemption: JSON | None = None,
    borrowing_limit: dict[str, str] | None = None,
    stop_policy: str | None = None,
) -> JSON:
    """``flavors``: flavor name -> {resource: nominal quota}, in order (one resource group)."""
    resources = sorted({r for quotas in flavors.values() for r in quotas})
    group = {
        "coveredResources": resources,
        "flavors": [
            {
                "name": f,
                "resources": [
                    {"name": r, "nominalQuota": quotas.get(r, "0")}
                    | ({"borrowingLimit": borrowing_limit[r]} if borrowing_limit and r in borrowing_limit else {})
                    for r in resources
                ],
            }
            for f, quotas in flavors.items()
        ],
    }
    spec: JSON = {"namespaceSelector": {}, "queueingStrategy": strategy, "resourceGroups": [group]}
    if cohort:
        spec["cohortName"] = cohort
    if preemption:
        spec["preemption"] = preemption
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def priority_class(name: str, value: int) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": f"priority {value}",
    }


def local_queue(namespace: str, name: str, cq: str) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def job(
    namespace: str,
    name: str,
    *,
    queue: str,
    parallelism: int = 1,
    requests: dict[str, str] | None = None,
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
) -> JSON:
    """Extended resources (a ``/`` in the name, e.g. ``nvidia.com/gpu``) get limits equal to their requests, as
    the API server requires for resources that cannot be overcommitted."""
    all_labels = {"kueue.x-k8s.io/queue-name": queue} | (labels or {})
    if priority_class:
        all_labels["kueue.x-k8s.io/priority-class"] = priority_class
    requests = requests or {"cpu": "1"}
    resources: JSON = {"requests": requests}
    if extended := {r: q for r, q in requests.items() if "/" in r}:
        resources["limits"] = extended
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": all_labels},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "resources": resources}],
                }
                | ({"nodeSelector": node_selector} if node_selector else {})
            },
        },
    }


def apply(cluster: LocalCluster, *objects: JSON) -> None:
    """``kubectl apply --server-side`` of each object, in order."""
    for obj in objects:
        api(cluster).apply(obj)


def create(cluster: LocalCluster, obj: JSON, *extra: str) -> JSON:
    done = cluster.kubectl("create", "-o", "json", *extra, "-f", "-", input=json.dumps(obj))
    return dict(json.loads(done.stdout))


def get(cluster: LocalCluster, kind: str, name: str, namespace: str | None = None) -> JSON:
    return api(cluster).get(kind, name, namespace)


def items(cluster: LocalCluster, kind: str, namespace: str | None = None) -> list[JSON]:
    """The objects of a kind in the namespace (in every namespace without one)."""
    return api(cluster).list(kind, namespace)


def eventually(check: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition") -> Any:
    """Polls ``check`` until it returns something truthy; fails with the last value seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


def condition(obj: JSON, kind: str) -> JSON | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def is_true(obj: JSON, kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def job_pods(cluster: LocalCluster, namespace: str, job_name: str) -> list[JSON]:
    """The pods of a Job (by the ``job-name`` label its controller sets)."""
    return api(cluster).list("pods", namespace, selector=f"job-name={job_name}")


def finish_job_pods(cluster: LocalCluster, namespace: str, job_name: str) -> int:
    """Marks every pod of the Job Succeeded, as a kubelet would; the Job controller then completes the Job."""
    pods = job_pods(cluster, namespace, job_name)
    done = {"status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}}
    for pod in pods:
        api(cluster).merge_patch("pod", pod["metadata"]["name"], done, namespace, subresource="status")
    return len(pods)


def patch(cluster: LocalCluster, kind: str, name: str, change: JSON, namespace: str | None = None) -> None:
    """A merge patch, as ``kubectl patch --type=merge`` sends it."""
    api(cluster).merge_patch(kind, name, change, namespace)


def maybe_get(cluster: LocalCluster, kind: str, name: str, namespace: str | None = None) -> JSON | None:
    """The object, or None while it does not exist."""
    return api(cluster).maybe_get(kind, name, namespace)


def events_about(cluster: LocalCluster, namespace: str, name: str) -> list[JSON]:
    return [e for e in api(cluster).list("events", namespace) if e["involvedObject"].get("name") == name]


WORKLOAD = "workloads.kueue.x-k8s.io"


def workload_of(cluster: LocalCluster, namespace: str, job_name: str) -> JSON | None:
    """The Workload that represents the Job ``job_name`` (None while it does not exist)."""
    return maybe_get(cluster, WORKLOAD, job_workload_name(namespace, job_name), namespace)


def started(cluster: LocalCluster, namespace: str, name: str, *, timeout: float = 30.0) -> JSON:
    """Waits until the Job is unsuspended and returns it."""
    return dict(
        eventually(
            lambda: (j := get(cluster, "job", name, namespace))["spec"].get("suspend") is False and j,
            timeout=timeout,
            what=f"job {name} to start",
        )
    )


def stopped(cluster: LocalCluster, namespace: str, name: str, *, timeout: float = 30.0) -> JSON:
    """Waits until the Job is suspended and its template no longer carries an admission, and returns it."""
    return dict(
        eventually(
            lambda: (
                (j := get(cluster, "job", name, namespace))["spec"].get("suspend") is True
                and "kueue.x-k8s.io/podset" not in ((j["spec"]["template"].get("metadata") or {}).get("labels") or {})
                and j
            ),
            timeout=timeout,
            what=f"job {name} to be stopped and restored",
        )
    )


def waiting(cluster: LocalCluster, namespace: str, job_name: str, *, text: str = "", timeout: float = 30.0) -> JSON:
    """Waits until the Job's Workload is pending (QuotaReserved=False) with ``text`` in its message."""

    def check() -> JSON | None:
        wl = workload_of(cluster, namespace, job_name)
        c = condition(wl, "QuotaReserved") if wl else None
        if (
            wl
            and c
            and c.get("status") == "False"
            and text in str(c.get("message"))
            and not (wl.get("status") or {}).get("admission")
        ):
            return wl
        return None

    return dict(eventually(check, timeout=timeout, what=f"the Workload of {job_name} to wait ({text!r})"))


def admission_flavors(workload: JSON) -> dict[str, str]:
    assignments = ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    return dict(assignments[0]["flavors"]) if assignments else {}
