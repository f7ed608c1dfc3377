"""Chaos: Turnstile is SIGKILLed and restarted at random moments while jobs flow through a cohort.

Five ClusterQueues share one cohort, each with two flavors (on-demand 6 CPU, spot 4 CPU): two may borrow up to
4 CPU per flavor, two without limit, one not at all. ``JOBS`` Jobs of mixed sizes (1, 2x1, 3 and 4x2 CPU) are created
at a seeded random pace through the API while the package's Turnstile process is killed with SIGKILL and
restarted ``RESTARTS`` times at seeded random moments (the seed is ``SEED``; a failure names it). A job "runs" for
``RUNTIME`` seconds: its pods are marked Succeeded that long after they appear.

Every ~150 ms a sampler reads Jobs, Pods, Workloads and ClusterQueues from the API server at one resourceVersion
(never Turnstile's cache) and checks the shared quota invariant (``invariants.violations``):
- no ClusterQueue holds more than nominal + borrowingLimit, and no cohort more than its total nominal, per
  flavor and resource (quota held = ``status.admission`` set and not Finished);
- no Job runs (``spec.suspend: false``, not finished) without a Workload that holds quota, and no Job's live
  pods are more, or ask for more, than its Workload's admission;
and, on top of it:
- an admission, once written, is never rewritten (another queue or flavor) nor dropped without the Workload
  finishing: nothing here preempts, so either would be a double admission.
After the last restart every unfinished Job has a Workload that is admitted or pending with a reason, and in the
end every Job completes and every Workload is Finished.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from tests.e2e.apistate import (
    ApiState,
    QueueLimits,
    Sampler,
    borrowing,
    condition,
    holds_quota,
    is_true,
    read_state,
)
from tests.e2e.invariants import Snapshot, read_snapshot, violations
from tests.e2e.kube import JSON, apply, cluster_queue, eventually, flavor, job, local_queue
from webhook.jobs.naming import job_workload_name
from webhook.local.client import ApiError, LocalClient
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

# `make test` runs a short storm (120 jobs, three restarts); `make bench-chaos` the long one (300 jobs, five restarts)
# through these variables, and TURNSTILE_CHAOS_SEED tries another seed.
SEED = int(os.environ.get("TURNSTILE_CHAOS_SEED", "20260611"))
JOBS = int(os.environ.get("TURNSTILE_CHAOS_JOBS", "120"))
QUEUES = 5
RESTARTS = int(os.environ.get("TURNSTILE_CHAOS_RESTARTS", "3"))
RUNTIME = 1.0  # seconds a job "runs" once its pods exist
# (weight, parallelism, cpu per pod)
SIZES = ((50, 1, "1"), (25, 2, "1"), (15, 1, "3"), (10, 4, "2"))
QUEUE_WEIGHTS = (35, 20, 15, 15, 15)
BORROWING = ({"cpu": "4"}, {"cpu": "4"}, None, None, {"cpu": "0"})


@dataclass(frozen=True)
class Plan:
    jobs: list[JSON]
    gaps: list[float]  # seconds before each create
    kills: list[tuple[float, float]]  # (seconds up before the kill, seconds down)


def make_plan(namespace: str, rng: random.Random) -> Plan:
    jobs = []
    for i in range(JOBS):
        q = rng.choices(range(QUEUES), weights=QUEUE_WEIGHTS)[0]
        _, parallelism, cpu = rng.choices(SIZES, weights=[s[0] for s in SIZES])[0]
        if BORROWING[q] == {"cpu": "0"} and parallelism * int(cpu) > 6:
            parallelism, cpu = 1, "3"  # 8 CPU can never fit a queue that may not borrow
        jobs.append(job(namespace, f"j{i:03d}", queue=f"lq{q}", parallelism=parallelism, requests={"cpu": cpu}))
    gaps = [rng.expovariate(12.0) for _ in range(JOBS)]
    kills = [(rng.uniform(3.0, 8.0), rng.uniform(0.0, 2.0)) for _ in range(RESTARTS)]
    return Plan(jobs, gaps, kills)


@pytest.fixture
def client(cluster: LocalCluster) -> Iterator[LocalClient]:
    api = LocalClient(cluster)
    yield api
    api.close()


class AdmissionTracker:
    """Sampler check: the quota invariant, and no admission rewritten or lost."""

    def __init__(self, queues: list[QueueLimits], namespace: str) -> None:
        self.queues = queues
        self.namespace = namespace
        self.admissions: dict[str, str] = {}  # Workload uid -> its admission, as first seen
        self.borrowed: set[str] = set()
        self.peak_admitted = 0

    def __call__(self, snapshot: Snapshot) -> list[str]:
        problems = violations(snapshot, [self.namespace])
        workloads = [w for w in snapshot.workloads if w["metadata"]["namespace"] == self.namespace]
        self.borrowed |= borrowing(self.queues, workloads)
        admitted = 0
        for wl in workloads:
            uid, name = wl["metadata"]["uid"], wl["metadata"]["name"]
            if holds_quota(wl):
                admitted += 1
                now = json.dumps(wl["status"]["admission"], sort_keys=True)
                first = self.admissions.setdefault(uid, now)
                if first != now:
                    problems.append(f"{name}: admission rewritten from {first} to {now}")
            elif uid in self.admissions and not is_true(wl, "Finished"):
                problems.append(f"{name}: lost its admission without finishing")
        self.peak_admitted = max(self.peak_admitted, admitted)
        return problems


def test_kill_and_restart_while_jobs_flow(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str, client: LocalClient
) -> None:
    rng = random.Random(SEED)
    suffix = namespace[-4:]
    cohort, on_demand, spot = f"chaos-{suffix}", f"chaos-od-{suffix}", f"chaos-spot-{suffix}"
    cqs = [
        cluster_queue(
            f"chaos-{suffix}-{q}",
            flavors={on_demand: {"cpu": "6"}, spot: {"cpu": "4"}},
            cohort=cohort,
            borrowing_limit=BORROWING[q],
        )
        for q in range(QUEUES)
    ]
    apply(cluster, flavor(on_demand), flavor(spot), *cqs)
    apply(cluster, *(local_queue(namespace, f"lq{q}", f"chaos-{suffix}-{q}") for q in range(QUEUES)))
    plan = make_plan(namespace, rng)
    tracker = AdmissionTracker([QueueLimits.of(cq) for cq in cqs], namespace)
    stop = threading.Event()
    creator = Creator(LocalClient(cluster), namespace, plan)
    finisher = Finisher(LocalClient(cluster), namespace, stop)
    sampler = Sampler(LocalClient(cluster), namespace, tracker, read=read_snapshot)
    threads = [
        threading.Thread(target=creator.run, name="creator", daemon=True),
        threading.Thread(target=finisher.run, name="finisher", daemon=True),
    ]
    started = time.monotonic()
    try:
        with sampler:
            for t in threads:
                t.start()
            # 1. Kill and restart at the planned moments while the jobs flow.
            for up, down in plan.kills:
                time.sleep(up)
                turnstile.kill()
                time.sleep(down)
                turnstile.start()
            threads[0].join(timeout=120)
            assert creator.created == JOBS, f"created {creator.created} of {JOBS} (seed {SEED})"

            # 2. After the last restart, every unfinished Job is admitted or pending with a reason.
            pending = eventually(
                lambda: _accounted_for(read_state(client, namespace)), timeout=60, what="every job accounted for"
            )
            # 3. Every Job finishes.
            eventually(lambda: _all_finished(read_state(client, namespace)), timeout=240, what="every job to finish")
            elapsed = time.monotonic() - started
    finally:
        stop.set()
        for t in threads:
            if t.is_alive():
                t.join(timeout=30)
        for c in (creator.client, finisher.client):
            c.close()
        if turnstile.process is None or turnstile.process.poll() is not None:
            turnstile.start()  # the package's other tests need it
        for obj in (*cqs, flavor(on_demand), flavor(spot)):
            cluster.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--wait=false", check=False)

    print(
        f"seed {SEED}: {JOBS} jobs, {RESTARTS} SIGKILL restarts, {elapsed:.0f}s; {sampler.samples} samples "
        f"({sampler.read_errors} read errors); peak admitted {tracker.peak_admitted}; pending with a reason after "
        f"the last restart: {max(pending, 0)}; create retries {creator.retries}; borrowing: {sorted(tracker.borrowed)}"
    )
    assert sampler.problems == [], f"seed {SEED}: " + "\n".join(sampler.problems[:20])
    # The checks ran often enough to mean something, and the scenario did borrow.
    assert sampler.samples >= elapsed / 1.0, f"only {sampler.samples} samples in {elapsed:.0f}s"
    assert sampler.read_errors <= sampler.samples // 10
    assert tracker.borrowed, "no queue ever borrowed: the scenario did not exercise the cohort"


def _accounted_for(state: ApiState) -> int | None:
    """The number of pending Workloads, once every unfinished Job's Workload is admitted or pending with a
    reason (None while some is neither)."""
    workloads = {w["metadata"]["name"]: w for w in state.workloads}
    pending = 0
    for j in state.jobs:
        if is_true(j, "Complete"):
            continue
        wl = workloads.get(job_workload_name(j["metadata"]["namespace"], j["metadata"]["name"]))
        if wl is None:
            return None
        if holds_quota(wl) and is_true(wl, "Admitted"):
            continue
        reserved = condition(wl, "QuotaReserved")
        if reserved is None or reserved.get("status") != "False" or not reserved.get("reason"):
            return None
        if not reserved.get("message"):
            return None
        pending += 1
    return pending if pending else -1  # -1: nothing was pending at that moment (still truthy)


def _all_finished(state: ApiState) -> bool:
    return (
        len(state.jobs) == JOBS
        and all(is_true(j, "Complete") for j in state.jobs)
        and len(state.workloads) == JOBS
        and all(is_true(w, "Finished") for w in state.workloads)
    )


class Creator:
    """Creates the planned Jobs at the planned pace; a create refused while the webhook is down is retried."""

    def __init__(self, client: LocalClient, namespace: str, plan: Plan) -> None:
        self.client, self.namespace, self.plan = client, namespace, plan
        self.created = 0
        self.retries = 0

    def run(self) -> None:
        path = f"/apis/batch/v1/namespaces/{self.namespace}/jobs"
        deadline = time.monotonic() + 110
        for body, gap in zip(self.plan.jobs, self.plan.gaps, strict=True):
            time.sleep(gap)
            while time.monotonic() < deadline:
                try:
                    self.client.create(path, body)
                except ApiError as exc:
                    if exc.status != 409:  # 409: an earlier attempt got through
                        self.retries += 1
                        time.sleep(0.2)
                        continue
                except OSError:
                    self.retries += 1
                    time.sleep(0.2)
                    continue
                self.created += 1
                break


class Finisher:
    """Plays kubelet: a pod is marked Succeeded ``RUNTIME`` seconds after it is first seen."""

    def __init__(self, client: LocalClient, namespace: str, stop: threading.Event) -> None:
        self.client, self.namespace, self.stop = client, namespace, stop
        self.first_seen: dict[str, float] = {}
        self.finished: set[str] = set()

    def run(self) -> None:
        pods_path = f"/api/v1/namespaces/{self.namespace}/pods"
        with ThreadPoolExecutor(4, thread_name_prefix="finisher") as pool:
            while not self.stop.wait(0.2):
                try:
                    pods = self.client.get(pods_path)["items"]
                except (ApiError, OSError):
                    continue
                now = time.monotonic()
                due = []
                for pod in pods:
                    uid = pod["metadata"]["uid"]
                    if uid in self.finished or (pod.get("status") or {}).get("phase") != "Pending":
                        continue
                    if now - self.first_seen.setdefault(uid, now) >= RUNTIME:
                        due.append((uid, pod["metadata"]["name"]))
                done = pool.map(lambda pod: self._succeed(f"{pods_path}/{pod[1]}/status"), due)
                self.finished |= {uid for (uid, _), ok in zip(due, done, strict=True) if ok}

    def _succeed(self, path: str) -> bool:
        patch = {"status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}}
        try:
            self.client.merge_patch(path, patch)
        except (ApiError, OSError):
            return False  # a deleted pod is no longer listed; anything else is tried again
        return True
