"""The life of one job of a kind suspended as a whole, through Turnstile, for any kind of the registry.

``run_lifecycle`` walks the path every such kind must take: created -> suspended by the webhook -> a Workload
with the kind's pod sets and totals -> admitted -> released with the flavor's nodeSelector and tolerations ->
finished (the test plays the kind's controller and writes the finished status; a kind that never finishes is
deleted) frees the quota for the next one -> preempted by a higher-priority job: suspended again, its pod
templates restored. A kind's test gives its object builder, where its pod templates live and how its controller
reports it finished.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.e2e.kube import (
    WORKLOAD,
    apply,
    cluster_queue,
    condition,
    create,
    eventually,
    flavor,
    get,
    is_true,
    local_queue,
    maybe_get,
    priority_class,
)
from webhook.api.quantity import ZERO, parse_quantity
from webhook.jobs.adapter import JobKind
from webhook.jobs.naming import workload_name
from webhook.local.cluster import LocalCluster

JSON = dict[str, Any]
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "turnstile", "effect": "NoSchedule"}


@dataclass(frozen=True)
class KindUnderTest:
    kind: JobKind
    # (namespace, name, queue, priority class label) -> the object, its pods asking for 1 CPU each
    build: Callable[[str, str, str, str], JSON]
    # the object -> its pod templates, by pod set name
    templates: Callable[[JSON], dict[str, JSON]]
    # the pod sets and counts its Workload must have
    pod_sets: dict[str, int]
    # the status its controller writes when it has finished successfully; None for a kind that never finishes
    # (a RayCluster serves until deleted): the test deletes it instead
    finished_status: JSON | None
    suspend_path: tuple[str, ...] = ("spec", "suspend")

    @property
    def resource(self) -> str:
        return f"{self.kind.plural}.{self.kind.group}"


def _suspended(obj: JSON, kut: KindUnderTest) -> bool:
    value: Any = obj
    for step in kut.suspend_path:
        value = (value or {}).get(step)
    return value is True


def _workload(cluster: LocalCluster, kut: KindUnderTest, namespace: str, name: str) -> JSON | None:
    wl_name = workload_name(kind=kut.kind.kind, group=kut.kind.group, namespace=namespace, name=name)
    return maybe_get(cluster, WORKLOAD, wl_name, namespace)


def _admitted(cluster: LocalCluster, kut: KindUnderTest, namespace: str, name: str) -> JSON:
    return dict(
        eventually(
            lambda: (w := _workload(cluster, kut, namespace, name)) and is_true(w, "Admitted") and w,
            what=f"the Workload of {name} to be admitted",
        )
    )


def _running(cluster: LocalCluster, kut: KindUnderTest, namespace: str, name: str) -> JSON:
    return dict(
        eventually(
            lambda: not _suspended(o := get(cluster, kut.resource, name, namespace), kut) and o,
            what=f"{name} to be released",
        )
    )


def run_lifecycle(cluster: LocalCluster, namespace: str, kut: KindUnderTest) -> None:
    total = sum(kut.pod_sets.values())
    flavor_name, pool = f"fl-{namespace}", f"pool-{namespace}"[:63]
    low, high = f"low-{namespace}", f"high-{namespace}"
    cq = f"cq-{namespace}"
    apply(
        cluster,
        flavor(flavor_name, node_labels={"pool": pool}, tolerations=[TOLERATION]),
        cluster_queue(
            cq, flavors={flavor_name: {"cpu": str(total + 1)}}, preemption={"withinClusterQueue": "LowerPriority"}
        ),
        local_queue(namespace, "q", cq),
        priority_class(low, 10),
        priority_class(high, 1000),
    )
    eventually(lambda: maybe_get(cluster, "localqueues.kueue.x-k8s.io", "q", namespace), what="the LocalQueue")

    # 1. Created: the webhook suspends it at once (before any controller could start a pod).
    first = create(cluster, kut.build(namespace, "first", "q", low))
    assert _suspended(first, kut), f"{kut.kind.kind} was not suspended on creation"

    # 2. Its Workload: one pod set per template with the kind's counts, the CPU of all its pods; admitted.
    wl = _admitted(cluster, kut, namespace, "first")
    assert {p["name"]: p["count"] for p in wl["spec"]["podSets"]} == kut.pod_sets
    assignments = wl["status"]["admission"]["podSetAssignments"]
    assert sum((parse_quantity(a["resourceUsage"]["cpu"]) for a in assignments), ZERO) == parse_quantity(str(total))
    assert {a["flavors"]["cpu"] for a in assignments} == {flavor_name}

    # 3. Released with the flavor's node labels and tolerations in every pod template.
    running = _running(cluster, kut, namespace, "first")
    for podset, template in kut.templates(running).items():
        assert template["spec"].get("nodeSelector") == {"pool": pool}, podset
        assert TOLERATION in template["spec"].get("tolerations", []), podset

    # 4. A second one does not fit beside the first: it waits, suspended.
    create(cluster, kut.build(namespace, "second", "q", low))
    eventually(
        lambda: (
            (w := _workload(cluster, kut, namespace, "second"))
            and (c := condition(w, "QuotaReserved"))
            and c["status"] == "False"
        ),
        what="the second Workload to wait for quota",
    )
    assert _suspended(get(cluster, kut.resource, "second", namespace), kut)

    # 5. The first finishes (the test writes what the kind's controller would), or is deleted when its kind never
    #    finishes: its quota goes to the second.
    if kut.finished_status is not None:
        cluster.kubectl(
            "patch",
            kut.resource,
            "first",
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": kut.finished_status}),
        )
        eventually(
            lambda: (w := _workload(cluster, kut, namespace, "first")) and is_true(w, "Finished") and w,
            what="the first Workload to finish",
        )
    else:
        cluster.kubectl("delete", kut.resource, "first", "-n", namespace, "--wait=false")
        eventually(lambda: _workload(cluster, kut, namespace, "first") is None, what="the first Workload to go")
    _admitted(cluster, kut, namespace, "second")
    _running(cluster, kut, namespace, "second")

    # 6. A higher-priority one preempts the second: suspended again, its templates as they were created.
    create(cluster, kut.build(namespace, "urgent", "q", high))
    evicted = eventually(
        lambda: (w := _workload(cluster, kut, namespace, "second")) and is_true(w, "Preempted") and w,
        what="the second Workload to be preempted",
    )
    assert condition(evicted, "Evicted") is not None
    original = kut.templates(kut.build(namespace, "second", "q", low))

    def restored() -> JSON | None:
        obj = get(cluster, kut.resource, "second", namespace)
        templates = kut.templates(obj)
        same = all(
            templates[p]["spec"].get("nodeSelector") == original[p]["spec"].get("nodeSelector")
            and templates[p]["spec"].get("tolerations") == original[p]["spec"].get("tolerations")
            for p in original
        )
        return obj if _suspended(obj, kut) and same else None

    eventually(restored, what="the preempted one to be suspended with its templates restored")
    _admitted(cluster, kut, namespace, "urgent")
    _running(cluster, kut, namespace, "urgent")
