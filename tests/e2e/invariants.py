"""The quota invariant, checked against the API server's own state (never Turnstile's cache).

At one resourceVersion (every list after the first is an exact read at the first one's revision), read every Job,
Pod, Workload and ClusterQueue, and report each way the promise "nothing runs beyond its admitted quota" is broken:

1. every ClusterQueue's admitted usage is within nominal + borrowingLimit, and no cohort holds more than its
   total nominal quota (quota held = ``status.admission`` set and not Finished, deleting or not);
2. every Job (in the namespaces checked) with live pods has a Workload that holds quota;
3. its live pods fit that admission: no more pods than the pod set's admitted ``count``, and their summed
   requests (as the API server stored them: after LimitRange defaults and RuntimeClass overhead) are within the
   pod set's admitted ``resourceUsage``, per resource;
4. a Job that runs (unsuspended, not finished) has a Workload that holds quota, even before its pods appear.

A pod is *live* when it may hold node resources: not Succeeded or Failed and not scheduling-gated. Pods being
deleted still count until they are gone. ``Watch`` runs the check on a thread every ~150 ms while a test acts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.apistate import QueueLimits, holds_quota, job_running, over_commit
from webhook.api.quantity import ZERO, Quantity, parse_quantity
from webhook.api.resources import add, pod_requests
from webhook.jobs.naming import job_workload_name
from webhook.local.client import LocalClient

JSON = dict[str, Any]
_PATHS = {
    "jobs": "/apis/batch/v1{ns}/jobs",
    "pods": "/api/v1{ns}/pods",
    "workloads": "/apis/kueue.x-k8s.io/v1beta2{ns}/workloads",
}
CLUSTER_QUEUES = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


@dataclass(frozen=True)
class Snapshot:
    resource_version: str
    jobs: list[JSON]
    pods: list[JSON]
    workloads: list[JSON]
    cluster_queues: list[JSON]


def read_snapshot(client: LocalClient, namespace: str | None = None) -> Snapshot:
    """Jobs, Pods and Workloads (of ``namespace``, or of the whole cluster) and every ClusterQueue, all at the
    same resourceVersion. With a namespace, queues are checked against that namespace's Workloads only: right
    when the queues a test uses serve only its namespace, and much cheaper to read every 150 ms."""
    scope = f"/namespaces/{namespace}" if namespace else ""
    jobs = client.get(_PATHS["jobs"].format(ns=scope))
    rv = jobs["metadata"]["resourceVersion"]
    at = f"?resourceVersion={rv}&resourceVersionMatch=Exact"
    # Only pods that may be live: finished ones are most of them in a long run, and cost the most to read.
    unfinished = "&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"
    pods = client.get(_PATHS["pods"].format(ns=scope) + at + unfinished)["items"]
    workloads = client.get(_PATHS["workloads"].format(ns=scope) + at)["items"]
    queues = client.get(CLUSTER_QUEUES + at)["items"]
    return Snapshot(rv, list(jobs["items"]), pods, workloads, queues)


def live(pod: Mapping[str, Any]) -> bool:
    """The pod may hold (or be about to hold) node resources."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return not (pod.get("spec") or {}).get("schedulingGates")


def _owner_uid(obj: Mapping[str, Any]) -> str | None:
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return str(owner.get("uid"))
    return None


def _job_workload(job: Mapping[str, Any], workloads: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The quota-holding Workload of ``job`` if it has one, else any Workload of it, else None."""
    meta = job["metadata"]
    mine = [
        w
        for w in workloads
        if w["metadata"]["namespace"] == meta["namespace"]
        and (
            _owner_uid(w) == meta["uid"] or w["metadata"]["name"] == job_workload_name(meta["namespace"], meta["name"])
        )
    ]
    holding = [w for w in mine if holds_quota(w) and _owner_uid(w) == meta["uid"]]
    return holding[0] if holding else (mine[0] if mine else None)


def _admitted(workload: Mapping[str, Any]) -> tuple[int, dict[str, Quantity]]:
    """(pods, resource usage) the Workload's admission allows, summed over its pod sets."""
    count, usage = 0, dict[str, Quantity]()
    counts = {p.get("name"): p.get("count", 1) for p in (workload.get("spec") or {}).get("podSets") or []}
    for assignment in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        count += int(assignment.get("count") or counts.get(assignment.get("name"), 0))
        usage = add(usage, {r: parse_quantity(q) for r, q in (assignment.get("resourceUsage") or {}).items()})
    return count, usage


def job_violations(job: Mapping[str, Any], pods: list[Mapping[str, Any]], workloads: list[JSON]) -> list[str]:
    """What is wrong with one Job and its live ``pods`` (empty: it runs within its admission)."""
    name = f"job {job['metadata']['namespace']}/{job['metadata']['name']}"
    if not pods and not job_running(job):
        return []
    workload = _job_workload(job, workloads)
    if workload is None or not holds_quota(workload) or _owner_uid(workload) != job["metadata"]["uid"]:
        what = "runs" if job_running(job) else f"has {len(pods)} live pods"
        return [f"{name} {what} without a Workload that holds quota"]
    allowed_pods, allowed = _admitted(workload)
    problems = []
    if len(pods) > allowed_pods:
        problems.append(f"{name} has {len(pods)} live pods; its Workload admits {allowed_pods}")
    used: dict[str, Quantity] = {}
    for pod in pods:
        used = add(used, pod_requests(pod.get("spec") or {}))
    for resource, quantity in sorted(used.items()):
        if quantity > allowed.get(resource, ZERO):
            problems.append(
                f"{name}: live pods request {quantity} {resource}; admitted {allowed.get(resource, ZERO)} "
                f"(Workload {workload['metadata']['name']})"
            )
    return problems


def violations(snapshot: Snapshot, namespaces: Iterable[str] | None = None) -> list[str]:
    """Every break of the invariant in ``snapshot``; Jobs are checked only in ``namespaces`` (None: all)."""
    scope = None if namespaces is None else set(namespaces)
    problems = over_commit([QueueLimits.of(cq) for cq in snapshot.cluster_queues], snapshot.workloads)
    pods_by_owner: dict[str, list[Mapping[str, Any]]] = {}
    for pod in snapshot.pods:
        uid = _owner_uid(pod)
        if uid is not None and live(pod):
            pods_by_owner.setdefault(uid, []).append(pod)
    for job in snapshot.jobs:
        if scope is not None and job["metadata"]["namespace"] not in scope:
            continue
        problems += job_violations(job, pods_by_owner.get(job["metadata"]["uid"], []), snapshot.workloads)
    return problems


def check(client: LocalClient, namespaces: Iterable[str] | None = None) -> list[str]:
    """One sample: read the API server and return the violations."""
    return violations(read_snapshot(client), namespaces)


@dataclass
class Watch:
    """Samples the invariant every ``interval`` seconds on a thread while a test acts (``with Watch(...)``).

    Problems are collected, never raised on the thread; ``assert_held`` fails with them afterwards, and also
    fails when there were too few samples for the check to mean anything. ``peak_pods`` is the most live pods
    of the checked namespaces seen in one sample (a test shows its jobs really ran).
    """

    client: LocalClient
    namespaces: tuple[str, ...]
    interval: float = 0.15
    samples: int = 0
    read_errors: int = 0
    peak_pods: int = 0
    problems: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Watch:
        self._thread = threading.Thread(target=self._run, name="invariant-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def sample(self) -> list[str]:
        """One sample now (also counted), e.g. at the end of a test."""
        snapshot = read_snapshot(self.client, self.namespaces[0] if len(self.namespaces) == 1 else None)
        found = violations(snapshot, self.namespaces)
        pods = sum(1 for p in snapshot.pods if p["metadata"]["namespace"] in self.namespaces and live(p))
        self.peak_pods = max(self.peak_pods, pods)
        self.samples += 1
        for problem in found:
            if len(self.problems) < 200:
                self.problems.append(f"rv {snapshot.resource_version}: {problem}")
        return found

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.sample()
            except Exception:  # counted; the next sample tries again
                self.read_errors += 1
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def keep_watching(self, samples: int, *, timeout: float = 30.0) -> None:
        """Go on until the thread has taken ``samples`` samples: a test that asserts something *keeps* holding
        watches for a while, however fast its own steps were."""
        deadline = time.monotonic() + timeout
        while self.samples < samples and time.monotonic() < deadline:
            time.sleep(self.interval / 3)

    def assert_held(self, *, min_samples: int = 3) -> None:
        self.sample()
        assert self.problems == [], "the quota invariant broke:\n" + "\n".join(self.problems[:20])
        assert self.samples >= min_samples, f"only {self.samples} samples ({self.read_errors} read errors)"
        assert self.read_errors <= self.samples // 5 + 1, f"{self.read_errors} read errors in {self.samples}"
