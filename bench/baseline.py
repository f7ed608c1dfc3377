"""Kueue's scheduler-performance baseline as bare Workloads, against Turnstile and (``--against kueue``) Kueue.

The scenario is Kueue's ``test/performance/scheduler/configs/baseline`` (v0.17.0): 5 cohorts x 6 ClusterQueues,
each with nominal 20 CPU, borrowingLimit 100, preemption ``reclaimWithinCohort: Any`` and ``withinClusterQueue:
LowerPriority``, one namespace and one LocalQueue per ClusterQueue. Per ClusterQueue three generators run at once,
each creating one Workload, sleeping its interval, and so on (as Kueue's generator does):
350 small (1 CPU, runs 200 ms, priority 50, every 100 ms), 100 medium (5 CPU, 500 ms, priority 100, every 500 ms)
and 50 large (20 CPU, 1,000 ms, priority 200, every 1,200 ms); ``--scale`` multiplies the counts.

This driver stands in for the jobs, as Kueue's perf runner does: once it sees a Workload admitted (``Admitted``
true) it waits that Workload's run time and marks it ``Finished`` (a status update with the resourceVersion it
saw; on a conflict it reads the Workload again). For Kueue it also completes evictions (clears the quota
reservation of an ``Evicted`` Workload, the runner's job); Turnstile does that itself for bare Workloads.
It follows every Workload through one watch and, at every event, adds up the quota held (``status.admission``
set and not ``Finished``) per ClusterQueue and per cohort: more than nominal + borrowingLimit in a ClusterQueue
or more than the cohort's nominal sum is a violation, reported.

Each run gets a fresh control plane (etcd + kube-apiserver, nothing else) with the system's own CRDs installed
(Turnstile's from manifests/crds, Kueue's from its module), then starts the controller: ``turnstile run``
(webhook configurations not registered: ``minimalkueue`` has no webhooks either, and these are bare Workloads)
or Kueue's ``minimalkueue`` built by hack/build-kueue.sh. Reported per run: wall time (first create to last
finished), time to admission per class (mean, p50, p99: from the watch's first sight of a Workload to the
sighting of the admission it finished under, as Kueue's recorder measures), admissions/s, Workload writes per
Workload as the API server counts them (``apiserver_request_total``; the driver's own creates and finishes
included, and shown apart), Event writes, CPU seconds and peak RSS of the controller (its whole process tree) and
of kube-apiserver (from /proc), quota violations, and the phases (the last create seen, each class's last finish,
the small class's admissions/s once the medium class is done). With ``--rounds N`` each system runs N times,
alternating; medians are printed, and the ratios Turnstile / Kueue.

Usage: ``.venv/bin/python -m bench.baseline [--scale 0.2] [--against kueue] [--rounds 2]`` (``make bench-baseline``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import os
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from bench.e2e import cpu_seconds, machine
from webhook.local.cluster import CRD_DIR, REPO_ROOT, LocalCluster
from webhook.local.turnstile import LocalTurnstile

JSON = dict[str, Any]
GROUP = "/apis/kueue.x-k8s.io/v1beta2"
COHORTS, QUEUES_PER_COHORT = 5, 6
NOMINAL, BORROWING_LIMIT = 20, 100
KUEUE_BUILD = REPO_ROOT / "hack" / "build-kueue.sh"
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclasses.dataclass(frozen=True)
class WorkloadClass:
    name: str
    count: int  # per ClusterQueue, at scale 1
    cpu: int
    runtime_ms: int
    priority: int
    interval_ms: int


CLASSES = (
    WorkloadClass("small", 350, 1, 200, 50, 100),
    WorkloadClass("medium", 100, 5, 500, 100, 500),
    WorkloadClass("large", 50, 20, 1000, 200, 1200),
)


def cq_names() -> list[tuple[str, str]]:
    """(ClusterQueue, cohort) pairs; each ClusterQueue's namespace and LocalQueue have its name."""
    return [(f"cq-{c}-{q}", f"cohort-{c}") for c in range(COHORTS) for q in range(QUEUES_PER_COHORT)]


def queue_objects() -> list[tuple[str, JSON]]:
    """(collection path, body) of everything the scenario needs before the first Workload, in creation order."""
    out: list[tuple[str, JSON]] = [
        (
            f"{GROUP}/resourceflavors",
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
        ),
    ]
    for cq, cohort in cq_names():
        quota = {"name": "cpu", "nominalQuota": str(NOMINAL), "borrowingLimit": str(BORROWING_LIMIT)}
        spec = {
            "cohortName": cohort,
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "rf", "resources": [quota]}]}],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        }
        out.append(
            (
                f"{GROUP}/clusterqueues",
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "ClusterQueue",
                    "metadata": {"name": cq},
                    "spec": spec,
                },
            )
        )
        out.append(("/api/v1/namespaces", {"metadata": {"name": cq}}))
        out.append(
            (
                f"{GROUP}/namespaces/{cq}/localqueues",
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": cq, "namespace": cq},
                    "spec": {"clusterQueue": cq},
                },
            )
        )
    return out


def workload(name: str, namespace: str, cls: WorkloadClass) -> JSON:
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": str(cls.cpu)}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "labels": {"bench/class": cls.name}},
        "spec": {
            "queueName": namespace,
            "priority": cls.priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


def _cond(obj: JSON, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- processes ------------------------------------------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in task.read_text().split()]
    return out


def tree_cpu(pid: int) -> float:
    total = 0.0
    for p in process_tree(pid):
        with contextlib.suppress(OSError, ValueError):
            total += cpu_seconds(p)
    return total


def tree_rss(pid: int) -> int:
    total = 0
    for p in process_tree(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * PAGE
    return total


def tree_pss(pid: int) -> int:
    """The tree's proportional set size: each page shared by n processes counted 1/n in each, so the interpreter's
    and libraries' pages that Turnstile's processes share are counted once in all (as a container's memory is),
    where ``tree_rss`` counts them once per process. For one process (minimalkueue) it is close to its RSS."""
    total = 0
    for p in process_tree(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
    return total


def same_niceness(pid: int) -> None:
    """Every thread of the tree at this driver's niceness.

    Turnstile's reconciler lowers its own event loop's priority by 10, against the webhook process it shares a
    container (a cgroup) with. On this machine there are no cgroups around it, so that would put it behind
    kube-apiserver, etcd and everything else running here, which no pod experiences; both controllers are run at
    the niceness of the rest of the run instead.
    """
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    for p in process_tree(pid):
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):
                if os.getpriority(os.PRIO_PROCESS, int(task.name)) != mine:
                    os.setpriority(os.PRIO_PROCESS, int(task.name), mine)


class _KueueCluster(LocalCluster):
    """A bare control plane carrying Kueue's CRDs instead of ours (same names: one cluster cannot hold both)."""

    def __init__(self, state_dir: Path, crds: Path) -> None:
        super().__init__(state_dir, controller_manager=False)
        self._crds = crds

    def install_crds(self, *, directory: Path | None = None, timeout: float = 60.0) -> None:
        super().install_crds(directory=self._crds, timeout=timeout)


def scratch() -> Path:
    """Where a run's control plane keeps its state: memory when it can."""
    return Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())


def bare_cluster(system: str, tmp: Path, kueue: Path | None) -> LocalCluster:
    """A control plane of etcd and kube-apiserver only, with the system's CRDs."""
    if system == "kueue":
        assert kueue is not None
        return _KueueCluster(tmp / "cluster", kueue / "crds")
    return LocalCluster(tmp / "cluster", controller_manager=False, crds=crds_without_conversion(tmp / "crds"))


def crds_without_conversion(directory: Path, replaced: Mapping[str, str] | None = None) -> Path:
    """Our CRDs as the benchmark installs Kueue's (the bases of its module): both versions served, no conversion
    webhook. The API server keeps a watch cache per served version of a CRD; with our manifests' conversion webhook,
    which no bench registers, the v1beta1 caches of Workloads, ClusterQueues and LocalQueues failed to convert,
    and listed every object from etcd again every few seconds (about 85 full lists of the Workloads in a scale-1.0
    run), in our run only. Without a conversion section the API server converts by the apiVersion alone, as it
    does for Kueue's. The benchmark reads and writes v1beta2 only. ``replaced``: files of ours by name, another
    text instead (another revision's)."""
    directory.mkdir(parents=True, exist_ok=True)
    for source in sorted(CRD_DIR.glob("*.yaml")):
        if source.name == "kustomization.yaml":
            continue
        text = (replaced or {}).get(source.name) or source.read_text()
        docs = [doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc]
        for doc in docs:
            doc.get("spec", {}).pop("conversion", None)
        (directory / source.name).write_text(yaml.safe_dump_all(docs))
    return directory


def kueue_dir() -> Path:
    done = subprocess.run(["bash", str(KUEUE_BUILD)], stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{KUEUE_BUILD} failed with exit code {done.returncode}; see its output above")
    return Path(done.stdout.strip().splitlines()[-1])


def start_controller(
    system: str, cluster: LocalCluster, tmp: Path, *, kueue: Path | None, leader_election: bool = False
) -> tuple[int, subprocess.Popen[bytes] | None, LocalTurnstile | None]:
    """Start the system's controller against ``cluster``: (its pid, minimalkueue's process, or the LocalTurnstile)."""
    if system == "kueue":
        assert kueue is not None
        log = (tmp / "minimalkueue.log").open("ab")
        proc = subprocess.Popen(
            [str(kueue / "minimalkueue"), f"--kubeconfig={cluster.kubeconfig}"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        return proc.pid, proc, None
    # minimalkueue runs no leader election; like for like, neither does Turnstile unless asked. With it, on the
    # overloaded 2-core machine a renewal (one GET and PUT) took over the 10 s renew deadline: the reconciler was
    # killed and started again from an empty cache, twice in one run (the gaps).
    timings = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"}
    lease = {"leaderElection": timings if leader_election else {"leaderElect": False}}
    turnstile = LocalTurnstile(cluster, tmp / "turnstile", config=lease, visibility=False)
    turnstile.start(register=False)
    assert turnstile.process is not None
    return turnstile.process.pid, None, turnstile


# -- one run --------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Tracked:
    cls: WorkloadClass
    first_seen: float = 0.0
    admitted_at: float = 0.0  # the last sighting of a transition to admitted
    epoch: int = 0  # transitions to admitted so far (a preempted Workload is admitted again)
    finished_at: float = 0.0
    was_admitted: bool = False
    evicting: bool = False
    latest: JSON = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Result:
    system: str
    workloads: int
    wall: float
    admission: dict[str, tuple[float, float, float]]  # class -> mean, p50, p99 seconds
    admissions_per_second: float
    writes: dict[str, float]  # what -> requests per Workload
    controller_cpu: float
    controller_rss: int
    controller_pss: int
    apiserver_cpu: float
    apiserver_rss: int
    etcd_cpu: float
    driver_cpu: float
    violations: int
    max_cohort_usage: int
    preemptions: int
    finished: int
    idle_with_pending: float
    restarts: int  # Turnstile's reconciler process started again (a lost Lease, a crash)
    phases: dict[str, float]  # when the stream and each class were done, and the last class's drain


class Run:
    """The stream, the watch, the finisher and the quota check for one system on one fresh API server."""

    def __init__(self, server: str, pki: Path, *, scale: float, system: str) -> None:
        self.server = server
        self.system = system
        self.scale = scale
        self.ssl = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.ssl.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        self.tracked: dict[tuple[str, str], Tracked] = {}
        self.expected = sum(max(1, round(c.count * scale)) for c in CLASSES) * len(cq_names())
        self.cohort_of = dict(cq_names())
        self.held: dict[tuple[str, str], tuple[str, int]] = {}  # key -> (ClusterQueue, CPU)
        self.cq_usage: dict[str, int] = {}
        self.cohort_usage: dict[str, int] = {}
        self.max_cohort_usage = 0
        self.violations = 0
        self.preemptions = 0
        self.own_writes = {"create": 0, "finish": 0, "evict": 0}
        self.done = asyncio.Event()
        self.finished = 0
        self.started = 0.0
        self.ended = 0.0
        self._tasks: set[asyncio.Task[None]] = set()
        # The saw-tooth: how long work waited while the controller left every cohort idle.
        self.pending: set[tuple[str, str]] = set()  # seen, not holding quota, not finished
        self.idle_with_pending = 0.0  # seconds with something pending and nothing holding quota
        self._idle_since: float | None = None
        self.timeline: list[tuple[float, str, str, str]] = []  # (seconds since start, event, namespace, name)
        # Where a hold goes, as the driver sees it (seconds): its sleep's lateness (the driver's own loop), the
        # finish write's round trip, and from that write's answer to the watch showing it.
        self.lag: dict[str, list[float]] = {"sleep late": [], "finish PUT": [], "finish answered -> seen": []}
        self._finish_answered: dict[tuple[str, str], float] = {}

    # -- HTTP --
    async def request(
        self, session: aiohttp.ClientSession, method: str, path: str, body: Any = None
    ) -> tuple[int, Any]:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        async with session.request(method, self.server + path, data=data, headers=headers, ssl=self.ssl) as r:
            raw = await r.read()
            return r.status, (orjson.loads(raw) if raw and raw[:1] == b"{" else raw)

    # -- the stream --
    async def generate(self, session: aiohttp.ClientSession, cq: str, index: int, cls: WorkloadClass) -> None:
        for i in range(max(1, round(cls.count * self.scale))):
            await asyncio.sleep(cls.interval_ms / 1000)
            name = f"{cls.name}-{index}-{i}"
            self.tracked.setdefault((cq, name), Tracked(cls))
            for _ in range(20):
                status, _body = await self.request(
                    session, "POST", f"{GROUP}/namespaces/{cq}/workloads", workload(name, cq, cls)
                )
                self.own_writes["create"] += 1
                if status in (201, 409):
                    break
                await asyncio.sleep(0.2)

    # -- the watch --
    async def watch(self, session: aiohttp.ClientSession, ready: asyncio.Event) -> None:
        await self.follow(session, f"{GROUP}/workloads", ready, self.seen, lambda obj: self.seen(obj, session=session))

    async def follow(
        self,
        session: aiohttp.ClientSession,
        path: str,
        ready: asyncio.Event,
        listed: Callable[[JSON], None],
        changed: Callable[[JSON], None],
    ) -> None:
        """List ``path`` (each item to ``listed``), then watch it (each added or modified object to ``changed``),
        listing again when the watch expires, until ``done``."""
        version = ""
        while not self.done.is_set():
            if not version:
                _, answer = await self.request(session, "GET", path)
                for obj in answer.get("items", []):
                    listed(obj)
                version = answer["metadata"]["resourceVersion"]
                ready.set()
            url = f"{self.server}{path}?watch=1&allowWatchBookmarks=true&resourceVersion={version}"
            timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
            async with session.get(url, ssl=self.ssl, timeout=timeout) as r:
                if r.status == 410:
                    version = ""
                    continue
                async for line in r.content:
                    event = orjson.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        version = "" if obj.get("code") == 410 else version
                        break
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        changed(obj)

    def seen(self, obj: JSON, *, session: aiohttp.ClientSession | None = None) -> None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        t = self.tracked.get(key)
        if t is None:
            return
        now = time.monotonic()
        t.latest = obj
        if not t.first_seen:
            t.first_seen = now
        # 1. quota held, checked at every event
        admission = (obj.get("status") or {}).get("admission")
        finished = _cond(obj, "Finished")
        holding = (admission.get("clusterQueue", ""), t.cls.cpu) if admission and not finished else None
        before = self.held.pop(key, None)
        if before is not None:
            self._use(before[0], -before[1])
        if holding is not None:
            self.held[key] = holding
            self._use(*holding)
        # 2. the job's life, as the runner mimics it
        admitted = _cond(obj, "Admitted") and not finished
        if admitted and not t.was_admitted:
            t.admitted_at, t.epoch = now, t.epoch + 1
            if session is not None:
                self._spawn(self.finish_later(session, key, t.epoch))
        t.was_admitted = admitted
        evicted = _cond(obj, "Evicted") and admission and not finished
        if evicted and self.system == "kueue" and session is not None and not t.evicting:
            t.evicting = True
            self._spawn(self.evict(session, key))
        if finished and not t.finished_at:
            t.finished_at = now
            answered = self._finish_answered.pop(key, None)
            if answered is not None:
                self.lag["finish answered -> seen"].append(now - answered)
            self.finished += 1
            if self.finished == self.expected:
                self.ended = now
                self.done.set()
        self._track_idle(key, now, pending=holding is None and not finished, admitted=admitted, finished=finished)

    def _track_idle(self, key: tuple[str, str], now: float, *, pending: bool, admitted: bool, finished: bool) -> None:
        was_pending = key in self.pending
        if pending:
            self.pending.add(key)
        else:
            self.pending.discard(key)
        if pending != was_pending or finished:
            event = "finished" if finished else "pending" if pending else "admitted" if admitted else "reserved"
            self.timeline.append((now - self.started if self.started else 0.0, event, *key))
        idle = bool(self.pending) and not self.held
        if idle and self._idle_since is None:
            self._idle_since = now
        elif not idle and self._idle_since is not None:
            self.idle_with_pending += now - self._idle_since
            self._idle_since = None

    def _use(self, cq: str, cpu: int) -> None:
        self.cq_usage[cq] = self.cq_usage.get(cq, 0) + cpu
        cohort = self.cohort_of.get(cq, cq)
        self.cohort_usage[cohort] = self.cohort_usage.get(cohort, 0) + cpu
        if cpu > 0:
            used = self.cohort_usage[cohort]
            self.max_cohort_usage = max(self.max_cohort_usage, used)
            if self.cq_usage[cq] > NOMINAL + BORROWING_LIMIT or used > NOMINAL * QUEUES_PER_COHORT:
                self.violations += 1

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the job stand-in --
    async def finish_later(self, session: aiohttp.ClientSession, key: tuple[str, str], epoch: int) -> None:
        t = self.tracked[key]
        slept = time.monotonic()
        await asyncio.sleep(t.cls.runtime_ms / 1000)
        self.lag["sleep late"].append(time.monotonic() - slept - t.cls.runtime_ms / 1000)
        obj = t.latest
        for _ in range(50):
            if t.epoch != epoch or t.finished_at or not _cond(obj, "Admitted") or _cond(obj, "Evicted"):
                return  # preempted meanwhile: the next admission runs it again
            status = dict(obj.get("status") or {})
            status["conditions"] = [
                *(status.get("conditions") or []),
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": "ByTest",
                    "message": "By test runner",
                    "lastTransitionTime": _now(),
                    "observedGeneration": (obj.get("metadata") or {}).get("generation", 1),
                },
            ]
            sent = time.monotonic()
            code, _ = await self.request(session, "PUT", self._path(key) + "/status", obj | {"status": status})
            self.own_writes["finish"] += 1
            if code == 200:
                answered = time.monotonic()
                self.lag["finish PUT"].append(answered - sent)
                if t.finished_at:  # the watch was quicker than the answer
                    self.lag["finish answered -> seen"].append(t.finished_at - answered)
                else:
                    self._finish_answered[key] = answered
            if code in (200, 404):
                return
            code, fresh = await self.request(session, "GET", self._path(key))
            if code == 200:
                obj = fresh

    async def evict(self, session: aiohttp.ClientSession, key: tuple[str, str]) -> None:
        """Kueue's runner: an evicted Workload's quota reservation is cleared (no job to stop)."""
        t = self.tracked[key]
        obj = t.latest
        try:
            for _ in range(50):
                status = dict(obj.get("status") or {})
                if not status.get("admission") or not _cond(obj, "Evicted") or _cond(obj, "Finished"):
                    return
                now = _now()
                conds = [
                    c for c in status.get("conditions") or [] if c.get("type") not in ("QuotaReserved", "Admitted")
                ]
                conds.append(
                    {
                        "type": "QuotaReserved",
                        "status": "False",
                        "reason": "Pending",
                        "message": "Evicted by the test runner",
                        "lastTransitionTime": now,
                    }
                )
                conds.append(
                    {
                        "type": "Admitted",
                        "status": "False",
                        "reason": "NoReservation",
                        "message": "The workload has no reservation",
                        "lastTransitionTime": now,
                    }
                )
                status = {k: v for k, v in status.items() if k != "admission"} | {"conditions": conds}
                code, _ = await self.request(session, "PUT", self._path(key) + "/status", obj | {"status": status})
                self.own_writes["evict"] += 1
                if code in (200, 404):
                    self.preemptions += code == 200
                    return
                code, fresh = await self.request(session, "GET", self._path(key))
                if code == 200:
                    obj = fresh
        finally:
            t.evicting = False

    def _path(self, key: tuple[str, str]) -> str:
        return f"{GROUP}/namespaces/{key[0]}/workloads/{key[1]}"

    async def ready(self, session: aiohttp.ClientSession) -> None:
        """Every ClusterQueue says it is active: the controller has seen the queues."""
        timeout = 120.0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _, listed = await self.request(session, "GET", f"{GROUP}/clusterqueues")
            if len(listed.get("items", [])) == len(cq_names()) and all(_cond(cq, "Active") for cq in listed["items"]):
                return
            await asyncio.sleep(0.5)
        raise RuntimeError(f"{self.system}: ClusterQueues not active within {timeout:.0f}s")

    async def stream(self, limit: float) -> None:
        connector = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(connector=connector) as session:
            for path, body in queue_objects():
                code, answer = await self.request(session, "POST", path, body)
                if code not in (201, 409):
                    raise RuntimeError(f"creating {path}: HTTP {code}: {str(answer)[:300]}")
            await self.ready(session)
            listed = asyncio.Event()
            watcher = asyncio.ensure_future(self.watch(session, listed))
            await listed.wait()
            self.started = time.monotonic()
            gens = [self.generate(session, cq, index, cls) for cq, _ in cq_names() for index, cls in enumerate(CLASSES)]
            try:
                async with asyncio.timeout(limit):
                    await asyncio.gather(*gens)
                    await self.done.wait()
            except TimeoutError:
                self.ended = time.monotonic()
                print(f"{self.system}: TIMEOUT, {self.finished} of {self.expected} finished", file=sys.stderr)
            finally:
                watcher.cancel()
                for task in list(self._tasks):
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watcher


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def request_counts(metrics: str) -> dict[tuple[str, str, str], float]:
    """apiserver_request_total by (resource, subresource, verb), over every code."""
    out: dict[tuple[str, str, str], float] = {}
    for line in metrics.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
        key = (labels.get("resource", ""), labels.get("subresource", ""), labels.get("verb", ""))
        out[key] = out.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE")
COUNTED = ("workloads", "events", "clusterqueues", "localqueues", "cohorts")


def controller_requests(
    delta: dict[tuple[str, str, str], float], own: dict[str, int], admitted: int
) -> dict[str, float]:
    """The controller's requests per admission, by verb and resource (the driver's creates, finishes and
    evictions taken out; reads too: GET, LIST; WATCH requests are connections, not counted)."""
    mine = dict(delta)
    mine[("workloads", "", "POST")] = mine.get(("workloads", "", "POST"), 0.0) - own["create"]
    status_put = ("workloads", "status", "PUT")
    mine[status_put] = mine.get(status_put, 0.0) - own["finish"] - own["evict"]
    rows = {}
    for (res, sub, verb), count in sorted(mine.items()):
        if res in COUNTED and verb != "WATCH" and count > 0:
            rows[f"  controller {verb} {res}{'/' + sub if sub else ''} / admission"] = count / max(1, admitted)
    return rows


def run_once(
    system: str,
    *,
    scale: float,
    timeout: float,
    kueue: Path | None,
    logs: Path | None,
    profile: Path | None = None,
    keep_niceness: bool = False,
    leader_election: bool = False,
    apiserver_profile: float = 0.0,
) -> Result:
    with tempfile.TemporaryDirectory(prefix=f"turnstile-baseline-{system}-", dir=scratch()) as tmp:
        cluster = bare_cluster(system, Path(tmp), kueue)
        proc: subprocess.Popen[bytes] | None = None
        spy: subprocess.Popen[bytes] | None = None
        turnstile: LocalTurnstile | None = None
        run: Run | None = None
        cpu_timeline: list[str] = []
        try:
            print(f"{system}: starting a fresh control plane...", file=sys.stderr)
            state = cluster.start()
            pid, proc, turnstile = start_controller(
                system, cluster, Path(tmp), kueue=kueue, leader_election=leader_election
            )
            # py-spy (pip install py-spy): collapsed stacks of every process of Turnstile's tree
            if turnstile is not None and profile is not None:
                spy = subprocess.Popen(
                    [
                        "py-spy",
                        "record",
                        "--subprocesses",
                        "--nonblocking",
                        "--format",
                        "raw",
                        "--rate",
                        "50",
                        "-o",
                        str(profile),
                        "-p",
                        str(pid),
                    ]
                )
            apiserver, etcd = state.pids["kube-apiserver"], state.pids["etcd"]
            log_file = turnstile.log_file if turnstile is not None else None
            run = Run(cluster.server, cluster.pki_dir, scale=scale, system=system)
            before_requests = request_counts(_metrics(cluster))
            cpu0 = {
                "controller": tree_cpu(pid),
                "apiserver": cpu_seconds(apiserver),
                "etcd": cpu_seconds(etcd),
                "driver": cpu_seconds(os.getpid()),
            }
            peaks = {"controller": 0, "controller_pss": 0, "apiserver": 0}

            if logs is not None:
                logs.mkdir(parents=True, exist_ok=True)

            async def main() -> None:
                async def sample() -> None:
                    tick = 0
                    while True:
                        if not keep_niceness:
                            same_niceness(pid)
                        peaks["controller"] = max(peaks["controller"], tree_rss(pid))
                        peaks["controller_pss"] = max(peaks["controller_pss"], tree_pss(pid))
                        peaks["apiserver"] = max(peaks["apiserver"], tree_rss(apiserver))
                        if tick % 2 == 0 and run.started:  # each process's CPU seconds so far, once a second
                            at = time.monotonic() - run.started
                            spent = (tree_cpu(pid), cpu_seconds(apiserver), cpu_seconds(etcd), cpu_seconds(os.getpid()))
                            cpu_timeline.append(f"{at:.1f} " + " ".join(f"{s:.2f}" for s in spent) + "\n")
                        tick += 1
                        await asyncio.sleep(0.5)

                sampler = asyncio.ensure_future(sample())
                pprof = None
                if apiserver_profile and logs is not None:
                    pprof = asyncio.ensure_future(
                        asyncio.to_thread(
                            _apiserver_pprof, cluster, apiserver_profile, logs / f"{system}-apiserver.pprof"
                        )
                    )
                try:
                    await run.stream(timeout)
                finally:
                    sampler.cancel()
                    if pprof is not None:
                        await pprof

            asyncio.run(main())
            if run is not None:
                for what, values in run.lag.items():
                    if values:
                        print(
                            f"{system}: driver {what}: mean {statistics.fmean(values) * 1000:.0f} ms, p50 "
                            f"{_percentile(values, 0.5) * 1000:.0f}, p90 {_percentile(values, 0.9) * 1000:.0f} "
                            f"({len(values)})",
                            file=sys.stderr,
                        )
            cpu1 = {
                "controller": tree_cpu(pid),
                "apiserver": cpu_seconds(apiserver),
                "etcd": cpu_seconds(etcd),
                "driver": cpu_seconds(os.getpid()),
            }
            final_metrics = _metrics(cluster)
            after_requests = request_counts(final_metrics)
            if logs is not None:
                logs.mkdir(parents=True, exist_ok=True)
                (logs / f"{system}-apiserver-metrics.txt").write_text(final_metrics)
                if turnstile is not None:
                    (logs / f"{system}-controller-metrics.txt").write_text(turnstile.metrics())
            starts = log_file.read_text().count("reconciler process started") if log_file is not None else 1
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    spy.wait(timeout=30)
            if logs is not None:
                logs.mkdir(parents=True, exist_ok=True)
                if run is not None:  # what happened when: admissions against finishes, to see gaps
                    lines = (f"{t:.3f} {event} {ns}/{name}\n" for t, event, ns, name in run.timeline)
                    (logs / f"{system}-timeline.txt").write_text("".join(lines))
                    # seconds since the first create, then the CPU seconds of the controller, kube-apiserver, etcd
                    # and this driver so far (``bench.timeline`` prints them by phase)
                    (logs / f"{system}-cpu.txt").write_text("".join(cpu_timeline))
                for found in [*Path(tmp).glob("*.log"), *Path(tmp).glob("*/*.log"), *Path(tmp).glob("*/logs/*.log")]:
                    shutil.copy(found, logs / f"{system}-{found.name}")
            if proc is not None:
                proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=15)
                if proc.poll() is None:
                    proc.kill()
            if turnstile is not None:
                turnstile.stop()
            cluster.stop()
    delta = {k: v - before_requests.get(k, 0.0) for k, v in after_requests.items()}
    n = run.expected
    wl_writes = sum(v for (res, _sub, verb), v in delta.items() if res == "workloads" and verb in WRITE_VERBS)
    ev_writes = sum(v for (res, _sub, verb), v in delta.items() if res == "events" and verb in WRITE_VERBS)
    queue_writes = sum(
        v for (res, _s, verb), v in delta.items() if res in ("clusterqueues", "localqueues") and verb in WRITE_VERBS
    )
    own = sum(run.own_writes.values())
    admission: dict[str, tuple[float, float, float]] = {}
    for cls in CLASSES:
        waits = [t.admitted_at - t.first_seen for t in run.tracked.values() if t.cls == cls and t.finished_at]
        admission[cls.name] = (
            statistics.fmean(waits) if waits else float("nan"),
            _percentile(waits, 0.5),
            _percentile(waits, 0.99),
        )
    wall = (run.ended or time.monotonic()) - run.started
    admitted = sum(t.epoch for t in run.tracked.values())
    return Result(
        system=system,
        workloads=n,
        wall=wall,
        admission=admission,
        admissions_per_second=admitted / wall if wall else 0.0,
        writes={
            "workload writes / wl": wl_writes / n,
            "  of which the driver's": own / n,
            "  of which the controller's": (wl_writes - own) / n,
            "event writes / wl": ev_writes / n,
            "queue status writes": queue_writes,
            **controller_requests(delta, run.own_writes, admitted),
        },
        controller_cpu=cpu1["controller"] - cpu0["controller"],
        controller_rss=peaks["controller"],
        controller_pss=peaks["controller_pss"],
        apiserver_cpu=cpu1["apiserver"] - cpu0["apiserver"],
        apiserver_rss=peaks["apiserver"],
        etcd_cpu=cpu1["etcd"] - cpu0["etcd"],
        driver_cpu=cpu1["driver"] - cpu0["driver"],
        violations=run.violations,
        max_cohort_usage=run.max_cohort_usage,
        preemptions=run.preemptions,
        finished=run.finished,
        idle_with_pending=run.idle_with_pending,
        restarts=max(0, starts - 1),
        phases=phases(run),
    )


def phases(run: Run) -> dict[str, float]:
    """Where the wall time went, from the driver's sightings (seconds from the first create): the last create seen
    (the generators' own schedule ends at 60 s; a busy API server stretches it), each class's last finish (by
    priority, the large ones go first, then the medium), and the rate at which the lowest class was admitted once
    the class above it was done (its drain, to the end)."""
    tracked, start = list(run.tracked.values()), run.started
    out = {"phase: last create seen (s)": max((t.first_seen for t in tracked), default=start) - start}
    done: dict[str, float] = {}
    for cls in reversed(CLASSES):
        ends = [t.finished_at for t in tracked if t.cls == cls and t.finished_at]
        done[cls.name] = max(ends, default=start)
        out[f"phase: last {cls.name} finished (s)"] = done[cls.name] - start
    lowest, above = CLASSES[0], CLASSES[1]
    after = done[above.name]
    drained = sum(1 for t in tracked if t.cls == lowest and t.admitted_at >= after)
    span = (run.ended or time.monotonic()) - after
    out[f"phase: {lowest.name} admitted/s after the last {above.name}"] = drained / span if span > 0 else 0.0
    return out


def _admin_context(cluster: LocalCluster) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cluster.pki_dir / "ca.crt"))
    context.load_cert_chain(cluster.pki_dir / "admin.crt", cluster.pki_dir / "admin.key")
    return context


def _metrics(cluster: LocalCluster) -> str:
    with urllib.request.urlopen(cluster.server + "/metrics", context=_admin_context(cluster), timeout=30) as r:
        return str(r.read().decode())


def _apiserver_pprof(cluster: LocalCluster, seconds: float, out: Path) -> None:
    """kube-apiserver's own CPU profile (``go tool pprof -top FILE``) over the run's first ``seconds``."""
    url = f"{cluster.server}/debug/pprof/profile?seconds={int(seconds)}"
    with urllib.request.urlopen(url, context=_admin_context(cluster), timeout=seconds + 60) as r:
        out.write_bytes(r.read())


# -- report ---------------------------------------------------------------------------------------------------


def rows(result: Result) -> Iterator[tuple[str, float]]:
    yield "wall time, first create -> last finished (s)", result.wall
    for cls in CLASSES:
        mean, p50, p99 = result.admission[cls.name]
        yield f"time to admission {cls.name}: mean (s)", mean
        yield f"time to admission {cls.name}: p50 (s)", p50
        yield f"time to admission {cls.name}: p99 (s)", p99
    yield "admissions/s", result.admissions_per_second
    yield from result.writes.items()
    yield "controller CPU (s)", result.controller_cpu
    yield "controller CPU per 1000 admitted (s)", result.controller_cpu / max(1, result.workloads) * 1000
    yield "controller peak RSS (MiB)", result.controller_rss / 2**20
    yield "controller peak PSS (MiB)", result.controller_pss / 2**20
    yield "kube-apiserver CPU (s)", result.apiserver_cpu
    yield "kube-apiserver peak RSS (MiB)", result.apiserver_rss / 2**20
    yield "etcd CPU (s)", result.etcd_cpu
    yield "driver CPU (s)", result.driver_cpu
    yield "preemptions completed by the driver", float(result.preemptions)
    yield "max cohort usage (CPU, limit 120)", float(result.max_cohort_usage)
    yield "idle with work pending: nothing holds quota (s)", result.idle_with_pending
    yield "controller restarts (lost Lease, crash)", float(result.restarts)
    yield from result.phases.items()
    yield "quota violations", float(result.violations)
    yield "finished", float(result.finished)


def report(results: list[Result]) -> None:
    systems = list(dict.fromkeys(r.system for r in results))
    table: dict[str, dict[str, float]] = {}
    for system in systems:
        mine = [dict(rows(r)) for r in results if r.system == system]
        table[system] = {k: statistics.median(m.get(k, 0.0) for m in mine) for m0 in mine for k in m0}
    # The systems' request rows differ (a verb or resource only one of them uses): every row, 0 where absent.
    keys = list(dict.fromkeys(k for system in systems for k in table[system]))
    runs = {s: sum(r.system == s for r in results) for s in systems}
    header = f"{'median of ' + ', '.join(f'{runs[s]} {s}' for s in systems):52s}"
    header += "".join(f"{s:>12s}" for s in systems) + ("       ratio" if len(systems) == 2 else "")
    print(header)
    for key in keys:
        line = f"{key:52s}" + "".join(f"{table[s].get(key, 0.0):12.2f}" for s in systems)
        if len(systems) == 2:
            a, b = table["turnstile"].get(key, 0.0), table["kueue"].get(key, 0.0)
            line += f"{a / b:12.2f}" if b else f"{'-':>12s}"
        print(line)
    if len(systems) == 2:
        print("ratio = Turnstile / Kueue (below 1: Turnstile lower)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the Workload counts (1.0: 15,000)")
    parser.add_argument("--against", choices=("kueue",), default=None, help="run Kueue's minimalkueue too")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each system, alternating")
    parser.add_argument("--only", choices=("turnstile", "kueue"), default=None, help="run just this system")
    parser.add_argument("--timeout", type=float, default=1200.0, help="give up a run after this many seconds")
    parser.add_argument("--logs", type=Path, default=None, help="copy the controllers' and servers' logs here")
    parser.add_argument("--profile", type=Path, default=None, help="py-spy Turnstile's processes into this file")
    parser.add_argument(
        "--leader-election", action="store_true", help="Turnstile campaigns for its Lease (minimalkueue does not)"
    )
    parser.add_argument("--keep-niceness", action="store_true", help="leave Turnstile's reconciler at its nice 10")
    parser.add_argument(
        "--apiserver-profile",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --logs: kube-apiserver's CPU profile over the first SECONDS of each run (SYSTEM-apiserver.pprof)",
    )
    args = parser.parse_args()
    if args.scale <= 0 or args.rounds < 1:
        parser.error("--scale must be positive and --rounds at least 1")
    systems = [args.only] if args.only else ["turnstile", *(["kueue"] if args.against else [])]
    kueue = kueue_dir() if "kueue" in systems else None
    print(f"machine: {machine()}")
    results: list[Result] = []
    for round_ in range(args.rounds):
        order = systems if round_ % 2 == 0 else list(reversed(systems))
        for system in order:
            result = run_once(
                system,
                scale=args.scale,
                timeout=args.timeout,
                kueue=kueue,
                logs=args.logs,
                profile=args.profile,
                keep_niceness=args.keep_niceness,
                leader_election=args.leader_election,
                apiserver_profile=args.apiserver_profile,
            )
            results.append(result)
            print(
                f"-- {system}, round {round_ + 1}: {result.workloads} workloads, wall {result.wall:.1f}s, "
                f"{result.violations} quota violations",
                flush=True,
            )
            for key, value in rows(result):
                print(f"   {key:52s}{value:12.2f}")
    report(results)
    if any(r.violations for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
