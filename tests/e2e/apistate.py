"""What the API server says, independent of Turnstile's cache: consistent snapshots and quota accounting.

The chaos and HA tests check the core invariant (quota is never over-committed) against these, never against
anything Turnstile reports about itself. Jobs and Workloads are read at one resourceVersion (the second list is
an exact read at the first one's revision), so "this Job runs without an admitted Workload" is never an artefact
of reading the two lists at different moments.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.api.quantity import ZERO, Quantity, parse_quantity
from webhook.local.client import LocalClient

JSON = dict[str, Any]
FlavorResource = tuple[str, str]
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads"
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"


@dataclass(frozen=True)
class ApiState:
    resource_version: str
    jobs: list[JSON]
    workloads: list[JSON]


def read_state(client: LocalClient, namespace: str) -> ApiState:
    jobs = client.get(JOBS.format(ns=namespace))
    rv = jobs["metadata"]["resourceVersion"]
    workloads = client.get(WORKLOADS.format(ns=namespace) + f"?resourceVersion={rv}&resourceVersionMatch=Exact")
    return ApiState(rv, list(jobs["items"]), list(workloads["items"]))


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def holds_quota(workload: Mapping[str, Any]) -> bool:
    """Kueue's rule: quota is held from the moment ``status.admission`` is set until the Workload is Finished."""
    return bool((workload.get("status") or {}).get("admission")) and not is_true(workload, "Finished")


def job_finished(job: Mapping[str, Any]) -> bool:
    return any(is_true(job, kind) for kind in ("Complete", "Failed", "SuccessCriteriaMet", "FailureTarget"))


def job_running(job: Mapping[str, Any]) -> bool:
    """Unsuspended and not finished: the Job controller may be creating pods for it."""
    return (job.get("spec") or {}).get("suspend") is False and not job_finished(job)


def usage(workload: Mapping[str, Any]) -> dict[FlavorResource, Quantity]:
    """Quota a Workload's admission takes, per (flavor, resource)."""
    taken: dict[FlavorResource, Quantity] = {}
    admission = (workload.get("status") or {}).get("admission") or {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for resource, raw in (assignment.get("resourceUsage") or {}).items():
            key = (flavors.get(resource, "?"), resource)
            taken[key] = taken.get(key, ZERO) + parse_quantity(raw)
    return taken


@dataclass(frozen=True)
class QueueLimits:
    """One ClusterQueue's quota, per (flavor, resource): nominal and borrowing limit (None: the cohort's)."""

    name: str
    cohort: str | None
    nominal: dict[FlavorResource, Quantity]
    borrowing: dict[FlavorResource, Quantity | None]

    @classmethod
    def of(cls, cq: Mapping[str, Any]) -> QueueLimits:
        spec = cq.get("spec") or {}
        nominal: dict[FlavorResource, Quantity] = {}
        borrowing: dict[FlavorResource, Quantity | None] = {}
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for quota in flavor.get("resources") or []:
                    key = (flavor["name"], quota["name"])
                    nominal[key] = parse_quantity(quota["nominalQuota"])
                    limit = quota.get("borrowingLimit")
                    borrowing[key] = None if limit is None else parse_quantity(limit)
        return cls(cq["metadata"]["name"], spec.get("cohortName"), nominal, borrowing)


def held_by_queue(workloads: Iterable[Mapping[str, Any]]) -> dict[str, dict[FlavorResource, Quantity]]:
    held: dict[str, dict[FlavorResource, Quantity]] = {}
    for wl in workloads:
        if not holds_quota(wl):
            continue
        cq = wl["status"]["admission"]["clusterQueue"]
        row = held.setdefault(cq, {})
        for key, q in usage(wl).items():
            row[key] = row.get(key, ZERO) + q
    return held


def over_commit(queues: Iterable[QueueLimits], workloads: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every way admitted usage exceeds quota: a queue past nominal + borrowingLimit, a cohort past its total."""
    queues = list(queues)
    held = held_by_queue(workloads)
    problems: list[str] = []
    cohort_nominal: dict[tuple[str, FlavorResource], Quantity] = {}
    cohort_held: dict[tuple[str, FlavorResource], Quantity] = {}
    for q in queues:
        row = held.get(q.name, {})
        for key, used in row.items():
            if key not in q.nominal:
                problems.append(f"{q.name} holds {used} of {key}, which it has no quota for")
        for key, nominal in q.nominal.items():
            used = row.get(key, ZERO)
            limit = q.borrowing.get(key)
            if limit is not None and used > nominal + limit:
                problems.append(f"{q.name} holds {used} of {key} > nominal {nominal} + borrowingLimit {limit}")
            if q.cohort is None:
                if used > nominal:
                    problems.append(f"{q.name} holds {used} of {key} > nominal {nominal} (no cohort)")
                continue
            ck = (q.cohort, key)
            cohort_nominal[ck] = cohort_nominal.get(ck, ZERO) + nominal
            cohort_held[ck] = cohort_held.get(ck, ZERO) + used
    for ck, used in cohort_held.items():
        if used > cohort_nominal[ck]:
            problems.append(f"cohort {ck[0]} holds {used} of {ck[1]} > its nominal total {cohort_nominal[ck]}")
    return problems


def borrowing(queues: Iterable[QueueLimits], workloads: Iterable[Mapping[str, Any]]) -> set[str]:
    """The queues that hold more than their nominal quota of something right now."""
    held = held_by_queue(workloads)
    return {q.name for q in queues for key, used in held.get(q.name, {}).items() if used > q.nominal.get(key, ZERO)}


@dataclass
class Sampler:
    """Reads the API server every ``interval`` seconds on a thread and runs ``check`` on each snapshot.

    ``check`` returns the problems it sees; they are collected (the thread never raises), so the test asserts
    on them afterwards. Read errors (the API server is busy) are counted, not hidden: a test can bound them.
    """

    client: LocalClient
    namespace: str
    check: Callable[[Any], list[str]]
    interval: float = 0.15
    # What one sample reads: by default the namespace's Jobs and Workloads (``read_state``); the chaos test reads
    # a whole-cluster ``invariants.Snapshot`` instead.
    read: Callable[[LocalClient, str], Any] = read_state
    samples: int = 0
    read_errors: int = 0
    problems: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="api-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                state = self.read(self.client, self.namespace)
            except Exception:  # counted; the next sample tries again
                self.read_errors += 1
            else:
                self.samples += 1
                for problem in self.check(state):
                    if len(self.problems) < 200:
                        self.problems.append(f"rv {state.resource_version}: {problem}")
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        self.client.close()
