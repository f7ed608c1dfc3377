"""Soak under hostile traffic: valid reviews at a steady rate while the webhook port is abused and the leader
schedules a deep backlog; loopback only, bounded in time and requests.

Starts a bare control plane (etcd + kube-apiserver, no nodes) in a temporary directory, creates ``--pending``
bare Workloads (100 ClusterQueues with 1 CPU each, every Workload asks 1 CPU: one admitted per queue, the rest
pending) *before* Turnstile starts, so Turnstile lists them at start instead of streaming 50,000 watch events;
then starts one ``turnstile run`` (Turnstile's default lease timings 15 s / 10 s / 2 s, webhooks not registered
with the API server: the bench is the only client of the port) and waits until it leads and has run a pass.

Then, together, for ``--seconds``:
1. steady valid reviews: Job CREATE reviews to ``/mutate/batch/v1/jobs`` at ``--rate``/s, open loop, from a
   separate process (so the attack traffic does not distort the timing): by default ``hack/loadgen``, Go's HTTP/1.1
   client as kube-apiserver uses it, latency counted from each review's due time (``bench.validload``); with
   ``--client python`` the bench's own aiohttp client over 16 keep-alive connections, as before;
2. ``--slow`` slow connections: TLS, a request line and one header line every 5 s, never finished (slowloris);
3. ``--aborted`` aborted uploads: headers announcing 3 MiB, all but the last KiB of the body, then the socket
   is closed (16 at a time);
4. ``--random-paths`` POSTs to random paths (16 keep-alive connections);
5. ``--big-clients`` clients each posting a valid 1.5 MiB Workload review to ``/validate/kueue/workloads`` in a
   loop (bounded by ``--big-requests`` each);
6. the leader's scheduling passes over the backlog (pending reasons are written 200 per pass, so each write
   wakes another pass).

Priorities: the control plane, the valid-review client and the Lease watcher run at nice -10 (``prioritise``), the
way they would run on other machines of a real cluster; Turnstile at the bench's own niceness (0 unless the bench is
started under ``nice``; nothing here raises it); the attackers below it, at nice 10 (``ATTACKER_NICENESS``): they
are load, not the system under test. Each of them is in a session of its own whose scheduling group (autogroup) has
the same niceness, or the niceness would not count between sessions (``--no-autogroups``: as before, it did not).
The output says so. The valid client also reports how far its own sends fell
behind their schedule, so a starved client shows; and for every process, its CPU time and the time it was runnable
but waiting for a CPU (``schedstat``), which tells a busy webhook from a starved one. ``--py-spy FILE`` samples
the webhook process during the soak (py-spy, in the venv) and reports where its serving thread spends its time.
``--perf-sched FILE`` traces the scheduler for ``--perf-seconds`` (``bench.schedtrace``) and says, for the valid
reviews over 10 ms, how much of their time the serving thread and the valid client ran and waited for a CPU, and
what ran while the serving thread waited.

The server notes its own time for each request (``webhook.requesttimes``; ``--no-server-times`` turns it off), and
with the Go client each valid review's time is split into the client's send delay, the way in, the server's own
time, the way back and the client's read (``bench.validload``). ``--turnstile-cpus 0`` gives Turnstile CPU 0 and
everything else the others for the soak (the machine split like a cluster; other work on the machine is not moved);
``--save DIR`` keeps the per-request times.

Reported: the machine, valid-review p50 / p99 / max and how many took longer than the API server's webhook
timeout (5 s), errors, Turnstile's RSS (its process and any children) before / peak during / after a settle
period, the number of metric series and the size and scrape time of ``/metrics``, scheduling passes and their
mean time, Lease renewals missed (gaps between observed renewals, polled every 0.25 s) and Lease losses (holder
changed, or the process exited), and what happened to each kind of attack.

Usage: ``.venv/bin/python -m bench.soak [--pending 50000 --seconds 60]``. ``make bench-soak`` runs the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import itertools
import multiprocessing
import os
import re
import shutil
import ssl
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench import schedtrace, validload
from bench.admission import job_review, percentile
from bench.machine import describe
from webhook import schedslice
from webhook.local.client import ApiError, LocalClient
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile
from webhook.requesttimes import ENVIRONMENT as REQUEST_TIMES_ENVIRONMENT
from webhook.requesttimes import read as read_request_times

JSON = dict[str, Any]
NAMESPACE = "soak"
QUEUES = 100
WEBHOOK_TIMEOUT_S = 5.0  # the API server's timeoutSeconds for our webhooks
LEASE = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"}
RETRY_PERIOD_S = 2.0
CONNECTIONS = 16
ABORTED_BODY = 3 * 1024 * 1024
BIG_REVIEW = int(1.5 * 1024 * 1024)


# -- the machine and the process ------------------------------------------------------------------------------


def machine() -> str:
    return describe()


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    total = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
        todo += _children(current)
    return total / 1024


CLK_TCK = os.sysconf("SC_CLK_TCK")


def processes(pid: int) -> dict[int, str]:
    """The process and its descendants: pid -> a short name (its command's last word that says what it is)."""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            cmd = Path(f"/proc/{current}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = b" ".join(cmd).decode(errors="replace")
        found[current] = (
            "resource-tracker"
            if "resource_tracker" in text
            else "reconciler"
            if "turnstile-reconciler" in text
            else "review-worker"
            if "turnstile-review-worker" in text
            else "child"
            if "spawn_main" in text
            else "main"
        )
        todo += _children(current)
    return found


def cpu_seconds(pid: int) -> float:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def minor_faults(pid: int) -> int:
    """Page faults served without I/O (a fresh page of an mmap, a grown heap): a cost of allocation patterns."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(raw[raw.rindex(")") + 2 :].split()[7])


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def sched_seconds(pid: int) -> tuple[float, float]:
    """(on a CPU, runnable but waiting for one) in seconds, summed over the process's threads (``schedstat``).

    The second figure answers "busy or starved?": a process whose requests are late while it waits long for a CPU
    is starved by the others; one that is on the CPU the whole time is the limit itself."""
    run = wait = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            fields = stat.read_text().split()
        except OSError:
            continue
        run += int(fields[0])
        wait += int(fields[1])
    return run / 1e9, wait / 1e9


def thread_sched_seconds(pid: int) -> dict[str, tuple[float, float]]:
    """``sched_seconds`` of the main thread (the serving loop) and of the other threads together."""
    found = {"main thread": (0.0, 0.0), "other threads": (0.0, 0.0)}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue
        name = "main thread" if task.name == str(pid) else "other threads"
        run, wait = found[name]
        found[name] = (run + int(fields[0]) / 1e9, wait + int(fields[1]) / 1e9)
    return found


def own_sched_seconds() -> tuple[float, float]:
    return sched_seconds(os.getpid())


def machine_busy_seconds() -> tuple[float, float]:
    """(CPU seconds busy, CPU seconds in all) of the whole machine since boot (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / CLK_TCK, sum(fields) / CLK_TCK


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# Who gets the CPU first on the shared loopback machine. The control plane and the two measuring instruments (the
# valid-review client, which stands in for the API server calling the webhook, and the Lease watcher) run ahead of
# Turnstile and the attackers: on a real cluster they are other machines, and a starved instrument measures itself
# (at nice 0 the valid client's sends fell 1.4 s behind their schedule at load 19, so its latencies were its own).
# Turnstile and the attack traffic run at the niceness the bench was started with. Raising a priority needs root;
# without it they stay at the bench's.
INSTRUMENT_NICENESS = -10


#
# Niceness alone does not order processes of different sessions: with the kernel's autogroups (on here, and by
# default on most distributions) each session is a scheduling group of its own, the groups share the CPUs equally,
# and a process's niceness counts only against the others of its session. The control plane and Turnstile are
# started in sessions of their own, so before the groups got a niceness too the priorities above did nothing
# between them: the kube-apiserver at "nice -10" and the attackers at "nice 10" each took as much CPU as Turnstile.
# So the group of each process the bench starts is given the niceness too (``/proc/PID/autogroup``), and each
# instrument and the attackers move to a session of their own first. ``--no-autogroups`` leaves the groups alone
# (the figures before this). In a pod the container's cgroup plays that role and niceness orders its processes.
NO_AUTOGROUPS_ENV = "TURNSTILE_SOAK_NO_AUTOGROUPS"


def prioritise(pid: int, niceness: int = INSTRUMENT_NICENESS) -> None:
    """Sets every thread of ``pid`` to ``niceness`` (niceness is per thread on Linux; threads started later
    inherit their creator's), and its session's scheduling group too (see above)."""
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(task.name), niceness)
        except (OSError, ValueError):
            continue
    if not os.environ.get(NO_AUTOGROUPS_ENV):
        # OSError: no autogroups in this kernel, or no right to raise the group's priority
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/autogroup").write_text(str(niceness))


def _own_group(niceness: int) -> None:
    """This process in a session (so a scheduling group) of its own, at ``niceness``."""
    if not os.environ.get(NO_AUTOGROUPS_ENV):
        with contextlib.suppress(OSError):  # already a session leader
            os.setsid()
    prioritise(os.getpid(), niceness)


def _instrument() -> None:
    """Called first in an instrument's own process."""
    _own_group(INSTRUMENT_NICENESS)


# ``--turnstile-cpus``: the machine split in two for the soak, the way a cluster is. Turnstile (its process, its
# children and all their threads) gets the CPUs named; everything else the bench runs (the control plane, the
# valid-review client, the Lease watcher, the attackers and the bench itself) gets the others. On one shared set the
# webhook's serving thread waited for a CPU behind the control plane (nice -10) for most of the time a slow review
# took to reach it (bench.validload); on a cluster the API server and etcd run on other machines, and the attack
# traffic mostly comes from other nodes. What Turnstile must then hold is its own node's CPU: the serving loop
# against its reconciler, its review worker, and the work the attack traffic causes in it.


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` to ``cpus`` (affinity is per thread; threads started later inherit their creator's)."""
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, ValueError):
            os.sched_setaffinity(int(task.name), cpus)


# The attack traffic is load, not the system under test: on a real cluster it comes from other pods, mostly on other
# nodes. Here it shares two cores with Turnstile, so it runs below it (at the reconciler's niceness), or the soak
# would measure how the attackers' TLS work (1.5 GB of aborted uploads alone) crowds the webhook out of the CPU.
# Turnstile itself keeps the niceness a deployment gives it (the bench's, 0 by default): nothing here makes it
# run ahead of what production would.
ATTACKER_NICENESS = 10


def _attack_process(port: int, ca_pem: str, args: argparse.Namespace, results: Any) -> None:
    _own_group(args.attacker_nice)
    before = own_sched_seconds()
    out = asyncio.run(attacks(port, ca_pem, args))
    after = own_sched_seconds()
    # As a dict: a class of this module pickled in a spawned child names ``__mp_main__``, unknown to the parent.
    results.put((dict(vars(out)), (after[0] - before[0], after[1] - before[1])))


# -- the backlog ----------------------------------------------------------------------------------------------


def queue_objects() -> list[tuple[str, JSON]]:
    group = "/apis/kueue.x-k8s.io/v1beta2"
    out: list[tuple[str, JSON]] = [
        (f"{group}/resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                      "metadata": {"name": "default"}})
    ]  # fmt: skip
    for q in range(QUEUES):
        cq = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": f"cq-{q}"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                    }
                ],
            },
        }
        lq = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": f"lq-{q}", "namespace": NAMESPACE},
            "spec": {"clusterQueue": f"cq-{q}"},
        }
        out += [(f"{group}/clusterqueues", cq), (f"{group}/namespaces/{NAMESPACE}/localqueues", lq)]
    return out


def pod_template(cpu: str, *, env: int = 0) -> JSON:
    container: JSON = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    if env:
        container["env"] = [{"name": f"VAR_{i:06d}", "value": "x" * 80} for i in range(env)]
    return {"spec": {"restartPolicy": "Never", "containers": [container]}}


def workload(i: int, *, env: int = 0) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i}", "namespace": NAMESPACE},
        "spec": {
            "queueName": f"lq-{i % QUEUES}",
            "podSets": [{"name": "main", "count": 1, "template": pod_template("1", env=env)}],
        },
    }


LOADERS = 4  # processes creating the backlog (one interpreter's GIL caps a thread pool at a few hundred/s)
LOADER_THREADS = 12  # keep-alive connections per loader process


def _load_slice(state_dir: str, start: int, stop: int, step: int) -> None:
    _instrument()
    cluster = LocalCluster(Path(state_dir))
    cluster.load()
    client = LocalClient(cluster, timeout=60)
    # Strict field validation decodes every object twice in the API server; these objects are ours.
    path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/workloads?fieldValidation=Ignore"

    def one(i: int) -> None:
        for _ in range(20):
            try:
                client.create(path, workload(i))
                return
            except ApiError as exc:
                if exc.status == 409:
                    return
                time.sleep(0.2)
        raise RuntimeError(f"could not create wl-{i}")

    with ThreadPoolExecutor(LOADER_THREADS, thread_name_prefix="loader") as pool:
        list(pool.map(one, range(start, stop, step)))
    client.close()


def load_backlog(cluster: LocalCluster, client: LocalClient, count: int) -> float:
    """Creates the queues and ``count`` Workloads through the API server, from ``LOADERS`` processes at once."""
    client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    for path, obj in queue_objects():
        client.create(path, obj)
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    loaders = [
        context.Process(target=_load_slice, args=(str(cluster.state_dir), n, count, LOADERS), name=f"loader-{n}")
        for n in range(LOADERS)
    ]
    for loader in loaders:
        loader.start()
    for loader in loaders:
        loader.join()
        if loader.exitcode != 0:
            raise RuntimeError(f"{loader.name} exited with {loader.exitcode}")
    return time.monotonic() - started


def big_review(i: int) -> bytes:
    """A valid Workload CREATE review of about 1.5 MiB (one pod set whose container has a long env list)."""
    env = BIG_REVIEW // 115
    wl = workload(1_000_000 + i, env=env)
    request = {
        "uid": str(uuid.UUID(int=i)),
        "kind": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Workload"},
        "resource": {"group": "kueue.x-k8s.io", "version": "v1beta2", "resource": "workloads"},
        "operation": "CREATE",
        "namespace": NAMESPACE,
        "name": wl["metadata"]["name"],
        "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        "object": wl,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


# -- the steady valid load (its own process) ------------------------------------------------------------------


def _valid_load(port: int, ca_pem: str, rate: int, seconds: float, results: Any) -> None:
    _instrument()
    sched_before = own_sched_seconds()

    async def main() -> tuple[list[float], list[float], list[float], Counter[str]]:
        context = ssl.create_default_context(cadata=ca_pem)
        url = f"https://127.0.0.1:{port}/mutate/batch/v1/jobs"
        latencies: list[float] = []
        sents: list[float] = []  # when each review left (time.monotonic, as the scheduler trace's clock)
        lags: list[float] = []  # how late each review left its schedule: this client's own starvation
        outcomes: Counter[str] = Counter()
        timeout = aiohttp.ClientTimeout(total=10)
        connector = aiohttp.TCPConnector(ssl=context, limit=CONNECTIONS)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            loop = asyncio.get_running_loop()

            async def one(body: bytes, planned: float) -> None:
                sent = loop.time()
                lags.append(sent - planned)
                try:
                    async with session.post(url, data=body) as resp:
                        await resp.read()
                        outcomes[str(resp.status)] += 1
                except (aiohttp.ClientError, TimeoutError) as exc:
                    outcomes[type(exc).__name__] += 1
                latencies.append(loop.time() - sent)
                sents.append(sent)

            count = int(rate * seconds)
            start = loop.time() + 0.05
            tasks = []
            for i in range(count):
                planned = start + i / rate
                delay = planned - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(one(job_review(i), planned)))
            await asyncio.gather(*tasks)
        return latencies, sents, lags, outcomes

    latencies, sents, lags, outcomes = asyncio.run(main())
    sched_after = own_sched_seconds()
    sched = (sched_after[0] - sched_before[0], sched_after[1] - sched_before[1])
    results.put((latencies, sents, lags, dict(outcomes), sched))


# -- the attacks (this process) ------------------------------------------------------------------------------


@dataclass
class Attacks:
    slow_closed_by_server: int = 0
    slow_close_seconds: list[float] = field(default_factory=list)
    slow_refused: int = 0
    aborted_sent: int = 0
    aborted_failed_early: int = 0
    random_codes: Counter[str] = field(default_factory=Counter)
    big_codes: Counter[str] = field(default_factory=Counter)
    big_latencies: list[float] = field(default_factory=list)


async def _open(port: int, context: ssl.SSLContext) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="127.0.0.1")


async def slow_connection(port: int, context: ssl.SSLContext, until: float, out: Attacks) -> None:
    loop = asyncio.get_running_loop()
    opened = loop.time()
    try:
        reader, writer = await _open(port, context)
    except (OSError, ssl.SSLError):
        out.slow_refused += 1
        return
    try:
        writer.write(b"POST /validate/kueue/workloads HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        await writer.drain()
        while loop.time() < until:
            try:
                data = await asyncio.wait_for(reader.read(1024), timeout=min(5.0, max(0.01, until - loop.time())))
            except TimeoutError:
                writer.write(b"X-Slow: 1\r\n")
                await writer.drain()
                continue
            if not data:  # the server closed the connection (it may have sent a 408 first)
                out.slow_closed_by_server += 1
                out.slow_close_seconds.append(loop.time() - opened)
                return
    except (OSError, ssl.SSLError):
        out.slow_closed_by_server += 1
        out.slow_close_seconds.append(loop.time() - opened)
    finally:
        writer.close()


async def aborted_upload(port: int, context: ssl.SSLContext, out: Attacks) -> None:
    chunk = b"x" * (256 * 1024)
    try:
        _reader, writer = await _open(port, context)
    except (OSError, ssl.SSLError):
        out.aborted_failed_early += 1
        return
    try:
        writer.write(
            b"POST /validate/kueue/workloads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {ABORTED_BODY}\r\n\r\n".encode()
        )
        sent = 0
        while sent < ABORTED_BODY - 1024:
            piece = chunk[: ABORTED_BODY - 1024 - sent]
            writer.write(piece)
            await writer.drain()
            sent += len(piece)
        out.aborted_sent += 1
    except (OSError, ssl.SSLError):
        out.aborted_failed_early += 1
    finally:
        writer.transport.abort()  # go away without finishing the body


async def attacks(port: int, ca_pem: str, args: argparse.Namespace) -> Attacks:
    context = ssl.create_default_context(cadata=ca_pem)
    out = Attacks()
    loop = asyncio.get_running_loop()
    until = loop.time() + args.seconds

    async def slow_all() -> None:
        await asyncio.gather(*(slow_connection(port, context, until, out) for _ in range(args.slow)))

    async def aborted_all() -> None:
        gate = asyncio.Semaphore(16)
        pause = args.seconds * 0.8 / max(1, args.aborted)

        async def one(i: int) -> None:
            await asyncio.sleep(i * pause)  # spread over the soak
            async with gate:
                await aborted_upload(port, context, out)

        await asyncio.gather(*(one(i) for i in range(args.aborted)))

    timeout = aiohttp.ClientTimeout(total=30)

    async def random_all() -> None:
        connector = aiohttp.TCPConnector(ssl=context, limit=CONNECTIONS)
        pause = args.seconds * 0.8 / max(1, args.random_paths)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

            async def one(i: int) -> None:
                await asyncio.sleep(i * pause)
                try:
                    async with session.post(f"https://127.0.0.1:{port}/{uuid.uuid4().hex}", data=b"{}") as resp:
                        await resp.read()
                        out.random_codes[str(resp.status)] += 1
                except (aiohttp.ClientError, TimeoutError) as exc:
                    out.random_codes[type(exc).__name__] += 1

            await asyncio.gather(*(one(i) for i in range(args.random_paths)))

    async def big_all() -> None:
        body = big_review(0)
        connector = aiohttp.TCPConnector(ssl=context, limit=args.big_clients)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

            async def client() -> None:
                for _ in range(args.big_requests):
                    if loop.time() >= until:
                        return
                    sent = loop.time()
                    try:
                        async with session.post(f"https://127.0.0.1:{port}/validate/kueue/workloads", data=body) as r:
                            await r.read()
                            out.big_codes[str(r.status)] += 1
                    except (aiohttp.ClientError, TimeoutError) as exc:
                        out.big_codes[type(exc).__name__] += 1
                    out.big_latencies.append(loop.time() - sent)

            await asyncio.gather(*(client() for _ in range(args.big_clients)))

    await asyncio.gather(slow_all(), aborted_all(), random_all(), big_all())
    return out


# -- observers ------------------------------------------------------------------------------------------------


def _micro(value: str) -> float:
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC).timestamp()


def _lease_watch(state_dir: str, path: str, stop: Any, results: Any) -> None:
    """In a process of its own (a starved poller would see gaps that are not there): every renewTime seen."""
    _instrument()
    cluster = LocalCluster(Path(state_dir))
    cluster.load()
    client = LocalClient(cluster, timeout=5)
    renewals: list[tuple[str, float]] = []
    errors = 0
    while not stop.wait(0.25):
        try:
            spec = client.get(path).get("spec") or {}
        except (ApiError, OSError):
            errors += 1
            continue
        seen = (str(spec.get("holderIdentity") or ""), _micro(spec["renewTime"]) if spec.get("renewTime") else 0.0)
        if not renewals or renewals[-1] != seen:
            renewals.append(seen)
    results.put((renewals, errors, time.time()))


class LeaseWatch:
    """Renewals of the Lease as the API server stored them, their gaps, the holders."""

    def __init__(self, context: Any, cluster: LocalCluster, namespace: str, name: str) -> None:
        self._stop = context.Event()
        self._results = context.Queue()
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        self._process = context.Process(
            target=_lease_watch, args=(str(cluster.state_dir), path, self._stop, self._results), name="lease-watch"
        )
        self.gaps: list[float] = []
        self.holders: list[str] = []
        self.errors = 0

    def start(self) -> None:
        self._process.start()

    def finish(self) -> None:
        self._stop.set()
        renewals, self.errors, ended = self._results.get(timeout=30)
        self._process.join(10)
        times = [t for _, t in renewals if t]
        self.gaps = [b - a for a, b in itertools.pairwise(times)] + ([ended - times[-1]] if times else [])
        for holder, _ in renewals:
            if not self.holders or self.holders[-1] != holder:
                self.holders.append(holder)

    @property
    def missed(self) -> int:
        # A renewal is due every retry period; a gap of k periods (with 0.5 s of slack) misses k - 1.
        return sum(max(0, int((gap - 0.5) // RETRY_PERIOD_S)) for gap in self.gaps)


class RssWatch(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(name="rss-watch", daemon=True)
        self._pid = pid
        self.stop = threading.Event()
        self.peak = 0.0

    def run(self) -> None:
        while not self.stop.wait(0.5):
            self.peak = max(self.peak, tree_rss_mb(self._pid))


def scrape(url: str) -> tuple[int, int, float]:
    """(series, bytes, seconds) of one /metrics scrape."""
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=60) as response:
        text = response.read().decode()
    seconds = time.monotonic() - started
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    return series, len(text), seconds


def metric_sum(text: str, name: str) -> float:
    return sum(float(v) for v in re.findall(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+-]+)$", text, re.MULTILINE))


def wait_leading(turnstile: LocalTurnstile, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = turnstile.metrics()
        except OSError:  # still starting, or too busy to answer this once
            time.sleep(0.5)
            continue
        if 'replica_role="leader"' in text and metric_sum(text, "kueue_admission_attempts_total") >= 1:
            return
        time.sleep(0.5)
    raise RuntimeError("Turnstile did not lead and run a pass in time")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def start_py_spy(output: str, pid: int, seconds: float) -> Any:
    """py-spy sampling the webhook process (every thread, idle samples too) for ``seconds`` without pausing it."""
    import subprocess

    spy = Path(sys.executable).parent / "py-spy"
    return subprocess.Popen(
        [str(spy), "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200", "--idle",
         "--threads", "--nonblocking", "--format", "raw", "--output", output],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


IDLE_FRAMES = ("select (selectors.py", "poll (selectors.py", "wait (threading.py", "_recv_bytes", "_recv (multiproc")


def summarise_py_spy(path: Path, top: int = 12) -> str:
    """Where the serving thread (the one running the event loop) spent its samples: idle in the selector or busy,
    and the busiest frames (their own time) when busy."""
    threads: dict[str, Counter[str]] = {}
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        thread = next((f for f in frames if f.startswith("thread ")), "thread ?")
        calls = [f for f in frames if not f.startswith(("thread ", "process "))]
        threads.setdefault(thread, Counter())[calls[-1] if calls else "?"] += int(count)
    if not threads:
        return "py-spy: no samples"
    lines = []
    for thread, leaves in sorted(threads.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(leaves.values())
        idle = sum(n for leaf, n in leaves.items() if any(mark in leaf for mark in IDLE_FRAMES))
        # A thread woken from the selector but still waiting for a CPU is sampled there too: "idle" is an upper bound.
        lines.append(f"py-spy {thread}: {total} samples, {idle / total:.0%} in the selector or another wait")
    serving = max(threads.values(), key=lambda leaves: sum(leaves.values()))
    busy = Counter({leaf: n for leaf, n in serving.items() if not any(mark in leaf for mark in IDLE_FRAMES)})
    total_busy = sum(busy.values()) or 1
    lines += [f"  {n / total_busy:5.1%} {leaf}" for leaf, n in busy.most_common(top)]
    return "\n".join(lines)


# -- the run --------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    loadgen_binary = validload.build() if args.client == "go" else None
    with tempfile.TemporaryDirectory(prefix="turnstile-soak-", dir=base) as tmp:
        request_times = Path(tmp) / "request-times"
        cluster = LocalCluster(Path(tmp) / "cluster")
        turnstile = LocalTurnstile(cluster, Path(tmp) / "turnstile", config={"leaderElection": LEASE})
        try:
            print("starting the control plane...", file=sys.stderr)
            cluster.start()
            if cluster.state is not None:
                for pid in cluster.state.pids.values():
                    prioritise(pid)
            client = LocalClient(cluster)
            load_seconds = load_backlog(cluster, client, args.pending)
            print(f"created {args.pending} Workloads in {load_seconds:.0f}s; starting Turnstile...", file=sys.stderr)
            started = time.monotonic()
            extra_env = dict(item.split("=", 1) for item in args.turnstile_env)
            if not args.no_server_times:
                extra_env.setdefault(REQUEST_TIMES_ENVIRONMENT, str(request_times))
            saved = {key: os.environ.get(key) for key in extra_env}
            os.environ.update(extra_env)  # Turnstile's alone: the instruments and the attackers start later
            try:
                turnstile.start(register=False, timeout=600)
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
            wait_leading(turnstile, 600)
            ready_seconds = time.monotonic() - started
            assert turnstile.process is not None
            pid = turnstile.process.pid
            time.sleep(5)  # let the first passes' writes settle a little
            before_text = turnstile.metrics()
            rss_before = tree_rss_mb(pid)
            main_before = rss_mb(pid)
            tree = processes(pid)
            cpu_before = {p: cpu_seconds(p) for p in tree}
            control_plane = dict(cluster.state.pids) if cluster.state is not None else {}
            sched_before = {p: sched_seconds(p) for p in [*tree, *control_plane.values()]}
            threads_before = thread_sched_seconds(pid)
            faults_before = minor_faults(pid)
            series_before, _, _ = scrape(turnstile.metrics_url)
            cpu_split = ""
            if args.turnstile_cpus:
                ours = {int(c) for c in args.turnstile_cpus.split(",")}
                others = set(range(os.cpu_count() or 1)) - ours
                if not others:
                    raise SystemExit("--turnstile-cpus must leave at least one CPU for the rest")
                for p in tree:
                    pin(p, ours)
                for p in control_plane.values():
                    pin(p, others)
                os.sched_setaffinity(0, others)  # this thread: the instruments and attackers started below inherit it
                cpu_split = (
                    f"Turnstile on CPUs {sorted(ours)}; the control plane, clients and bench on {sorted(others)}"
                )
            context = multiprocessing.get_context("spawn")
            lease = LeaseWatch(context, cluster, "turnstile-system", "turnstile.x-k8s.io")
            rss = RssWatch(pid)
            lease.start()
            rss.start()

            print(f"soak for {args.seconds:.0f}s...", file=sys.stderr)
            load_start = load_average()
            busy_start = machine_busy_seconds()
            results = context.Queue()
            attack_results = context.Queue()
            ca = turnstile.ca_pem.decode()
            attacker = context.Process(target=_attack_process, args=(turnstile.port, ca, args, attack_results))
            valid: Any = None
            loadgen: validload.LoadGen | None = None
            if loadgen_binary is not None:
                loadgen = validload.LoadGen(
                    loadgen_binary, Path(tmp) / "loadgen", port=turnstile.port, ca_pem=ca, rate=args.rate,
                    seconds=args.seconds, niceness=INSTRUMENT_NICENESS, autogroups=not args.no_autogroups,
                    sched=sched_seconds,
                )  # fmt: skip
                valid_pid = loadgen.process.pid
            else:
                valid = context.Process(target=_valid_load, args=(turnstile.port, ca, args.rate, args.seconds, results))
                valid.start()
                valid_pid = valid.pid or 0
            attacker.start()
            spy = start_py_spy(args.py_spy, pid, args.seconds) if args.py_spy else None
            perf = schedtrace.record(args.perf_sched, args.perf_seconds) if args.perf_sched else None
            sent: list[validload.Sent] = []
            if loadgen is not None:
                sent = loadgen.finish(timeout=args.seconds + 120)
                latencies = [s.done - s.due for s in sent]
                sents = [s.due for s in sent]
                lags = [(s.wrote or s.done) - s.due for s in sent]
                outcomes = dict(Counter(s.outcome for s in sent))
                valid_sched = loadgen.sched
            else:
                latencies, sents, lags, outcomes, valid_sched = results.get(timeout=args.seconds + 120)
            attack_fields, attack_sched = attack_results.get(timeout=args.seconds + 120)
            attacked = Attacks(**attack_fields)
            if valid is not None:
                valid.join(timeout=30)
            attacker.join(timeout=30)
            load_end = load_average()
            busy_end = machine_busy_seconds()
            sched_used = {p: tuple(a - b for a, b in zip(sched_seconds(p), before, strict=True))
                          for p, before in sched_before.items()}  # fmt: skip
            threads_after = thread_sched_seconds(pid)
            faults = minor_faults(pid) - faults_before
            if spy is not None:
                spy.wait(timeout=args.seconds + 60)
            during_text = turnstile.metrics()
            time.sleep(args.settle)
            rss.stop.set()
            lease.finish()
            rss.join()
            rss_after = tree_rss_mb(pid)
            main_after = rss_mb(pid)
            cpu_used = {p: cpu_seconds(p) - before for p, before in cpu_before.items()}
            series_after, page_bytes, scrape_seconds = scrape(turnstile.metrics_url)
            alive = turnstile.process.poll() is None

            passes = metric_sum(during_text, "kueue_admission_attempt_duration_seconds_count") - metric_sum(
                before_text, "kueue_admission_attempt_duration_seconds_count"
            )
            pass_seconds = metric_sum(during_text, "kueue_admission_attempt_duration_seconds_sum") - metric_sum(
                before_text, "kueue_admission_attempt_duration_seconds_sum"
            )
            log_text = turnstile.log_file.read_text(errors="replace")
            lost = len(re.findall(r"could not renew Lease|lost the Lease", log_text))
            holders = [h for h in lease.holders if h]
            ok = outcomes.get("200", 0)
            errors = sum(n for k, n in outcomes.items() if k != "200")
            over = sum(1 for x in latencies if x > WEBHOOK_TIMEOUT_S)
            print(f"machine: {machine()}")
            print(
                f"priorities: control plane, valid-review client and Lease watcher at nice {INSTRUMENT_NICENESS}; "
                f"Turnstile at nice {os.getpriority(os.PRIO_PROCESS, 0)} (the bench's own; its reconciler threads "
                f"lower themselves to 10, its review worker to 5); attackers at nice {args.attacker_nice}; "
                + (
                    "niceness only, the sessions' groups left alone"
                    if args.no_autogroups
                    else "each (and Turnstile) in a scheduling group of its own, the groups at the same niceness"
                )
            )
            print(f"load average at the soak's start: {load_start}; at its end: {load_end}")
            print(f"CPUs: {cpu_split or 'all shared'}")
            serving_slice = schedslice.current_slice(pid)
            print(
                "the webhook's serving thread: time slice "
                + (f"{serving_slice[0] / 1e6:.2f} ms, nice {serving_slice[1]}" if serving_slice else "unknown")
            )
            if args.turnstile_env:
                print(f"Turnstile's environment: {' '.join(args.turnstile_env)}")
            print(f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; Turnstile commit: {_commit()}")
            print(
                f"backlog: {args.pending} pending Workloads in {QUEUES} ClusterQueues (loaded in {load_seconds:.0f}s; "
                f"Turnstile leading after {ready_seconds:.0f}s)"
            )
            print(
                f"soak: {args.seconds:.0f}s; {args.rate} valid reviews/s; {args.slow} slow connections; "
                f"{args.aborted} aborted 3 MiB bodies; {args.random_paths} random paths; {args.big_clients} clients "
                f"posting 1.5 MiB reviews"
            )
            print(
                "valid-review client: "
                + (
                    "hack/loadgen (Go, HTTP/1.1, up to 25 idle connections like kube-apiserver's; latency from each "
                    "review's due time)"
                    if loadgen is not None
                    else f"Python aiohttp, {CONNECTIONS} connections (latency from the coroutine's start)"
                )
            )
            print(
                f"valid reviews: {len(latencies)} sent, {ok} answered 200; p50 {ms(percentile(latencies, 0.5))}, "
                f"p99 {ms(percentile(latencies, 0.99))}, max {ms(max(latencies))}; "
                f"{over} over the {WEBHOOK_TIMEOUT_S:.0f} s webhook timeout; errors {errors} {dict(outcomes)}"
            )
            print(
                f"valid-review client's own lag (written to the socket, or started, behind its schedule): "
                f"p50 {ms(percentile(lags, 0.5))}, "
                f"p99 {ms(percentile(lags, 0.99))}, max {ms(max(lags))}"
            )
            big = attacked.big_latencies
            print(
                f"1.5 MiB reviews: {len(big)} answered {dict(attacked.big_codes)}"
                + (f", p50 {ms(percentile(big, 0.5))}, max {ms(max(big))}" if big else "")
            )
            closes = attacked.slow_close_seconds
            print(
                f"slow connections: {attacked.slow_closed_by_server} of {args.slow} closed by the server"
                + (f" (median after {percentile(closes, 0.5):.1f}s)" if closes else "")
                + f", {attacked.slow_refused} refused"
            )
            print(f"aborted uploads: {attacked.aborted_sent} sent and abandoned, {attacked.aborted_failed_early} cut "
                  f"short by the server")  # fmt: skip
            print(f"random paths: {dict(attacked.random_codes)}")
            print(
                f"RSS (Turnstile and its children): before {rss_before:.0f} MB, peak during {rss.peak:.0f} MB, after "
                f"{args.settle:.0f}s {rss_after:.0f} MB ({(rss_after / rss_before - 1) * 100:+.0f}% of before)"
            )
            print(
                f"RSS of the webhook process alone: before {main_before:.0f} MB, after {main_after:.0f} MB; CPU "
                f"seconds over the soak and settle: "
                + ", ".join(f"{tree[p]} {p} {cpu_used[p]:.1f}" for p in sorted(cpu_used))
            )
            names = {**{p: f"{tree[p]} {p}" for p in tree}, **{p: n for n, p in control_plane.items()}}
            print(
                "CPU s / waiting for a CPU s, during the soak: "
                + ", ".join(f"{names[p]} {run:.1f}/{wait:.1f}" for p, (run, wait) in sched_used.items())
                + f", valid client {valid_sched[0]:.1f}/{valid_sched[1]:.1f}"
                + f", attackers {attack_sched[0]:.1f}/{attack_sched[1]:.1f}"
            )
            ours = sum(run for run, _ in sched_used.values()) + valid_sched[0] + attack_sched[0]
            busy, whole = (end - start for start, end in zip(busy_start, busy_end, strict=True))
            print(
                f"machine CPU during the soak: {busy:.1f} s busy of {whole:.1f}; the bench's processes {ours:.1f} s, "
                f"the rest (other work on the machine, the kernel) {busy - ours:.1f} s"
            )
            print(
                "webhook process by thread (CPU s / waiting s, during the soak): "
                + ", ".join(
                    f"{name} {run - threads_before.get(name, (0, 0))[0]:.1f}/"
                    f"{wait - threads_before.get(name, (0, 0))[1]:.1f}"
                    for name, (run, wait) in sorted(threads_after.items())
                )
            )
            print(f"minor page faults of the webhook process during the soak: {faults}")
            if args.py_spy:
                print(summarise_py_spy(Path(args.py_spy)))
            if perf is not None:
                perf.wait(timeout=args.perf_seconds + 60)
                trace = schedtrace.load(args.perf_sched, [pid, valid_pid])
                who: dict[int, str] = {**names, valid_pid: "valid client", attacker.pid or 0: "attackers"}
                requests = list(zip(sents, latencies, strict=True))
                if args.timeline:
                    Path(args.timeline).write_text("".join(f"{a:.6f} {b:.6f}\n" for a, b in requests))
                print(schedtrace.report(schedtrace.explain(trace, pid, requests, who), trace, "the serving thread"))
                print(schedtrace.report(schedtrace.explain(trace, valid_pid, requests, who), trace, "the valid client"))
            print(
                f"metric series: {series_before} before, {series_after} after; /metrics {page_bytes / 1e6:.2f} MB, "
                f"scraped in {scrape_seconds:.2f}s"
            )
            print(
                f"scheduling passes during the soak: {passes:.0f}"
                + (f", {pass_seconds / passes * 1000:.0f} ms each" if passes else "")
            )
            print(
                f"Lease: {len(lease.gaps)} renewals seen, longest gap {max(lease.gaps, default=0):.1f}s, "
                f"{lease.missed} renewals missed; holders {len(set(holders))}; losses {lost + (0 if alive else 1)} "
                f"(process {'alive' if alive else f'exited {turnstile.process.returncode}'})"
            )
            if args.save:
                Path(args.save).mkdir(parents=True, exist_ok=True)
                Path(args.save, "valid").write_text(
                    "".join(f"{a:.6f} {b:.6f}\n" for a, b in zip(sents, latencies, strict=True))
                )
                if loadgen is not None:
                    shutil.copy(Path(tmp) / "loadgen" / "sent", Path(args.save) / "sent")
            if not args.no_server_times:
                turnstile.stop()  # the server writes its request times as it closes
                if args.save and request_times.exists():
                    shutil.copy(request_times, Path(args.save) / "request-times")
                if not request_times.exists():
                    print("the server's request times: not written (Turnstile did not close in time)")
                elif loadgen is not None:
                    print(validload.report(sent, read_request_times(request_times)))
                else:
                    print(validload.server_only(read_request_times(request_times)))
            return 0
        finally:
            if turnstile.process is not None and turnstile.process.poll() not in (None, 0):
                print(f"Turnstile exited with {turnstile.process.returncode}; the end of its log:", file=sys.stderr)
                print(turnstile.log_file.read_text()[-3000:], file=sys.stderr)
            turnstile.stop()
            cluster.stop()


def _commit() -> str:
    head = Path(__file__).resolve().parent.parent / ".git"
    try:
        import subprocess

        done = subprocess.run(
            ["git", "-C", str(head.parent), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pending", type=int, default=50_000, help="pending Workloads in the backlog")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the soak")
    parser.add_argument("--rate", type=int, default=200, help="valid reviews per second")
    parser.add_argument("--slow", type=int, default=300, help="slow connections")
    parser.add_argument("--aborted", type=int, default=500, help="aborted 3 MiB uploads")
    parser.add_argument("--random-paths", type=int, default=20_000, help="POSTs to random paths")
    parser.add_argument("--big-clients", type=int, default=8, help="clients posting 1.5 MiB reviews")
    parser.add_argument("--big-requests", type=int, default=40, help="1.5 MiB reviews per client at most")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after the soak before RSS is read")
    parser.add_argument(
        "--attacker-nice", type=int, default=ATTACKER_NICENESS, help="niceness of the attack traffic's process"
    )
    parser.add_argument(
        "--perf-sched", metavar="FILE", help="trace the scheduler (perf sched record) into FILE: why slow reviews were"
    )
    parser.add_argument("--timeline", metavar="FILE", help="with --perf-sched: each valid review's send time, latency")
    parser.add_argument("--perf-seconds", type=float, default=20.0, help="how long --perf-sched traces, from the start")
    parser.add_argument(
        "--turnstile-env", action="append", default=[], metavar="KEY=VALUE", help="in Turnstile's environment only"
    )
    parser.add_argument(
        "--no-autogroups", action="store_true", help="give niceness to processes only, not to their sessions' groups"
    )
    parser.add_argument("--py-spy", metavar="FILE", help="sample the webhook process with py-spy into FILE (raw)")
    parser.add_argument(
        "--client",
        choices=("go", "python"),
        default="go",
        help="the valid reviews' client: hack/loadgen, kube-apiserver's way (go), or the bench's own aiohttp (python)",
    )
    parser.add_argument(
        "--turnstile-cpus",
        metavar="LIST",
        help="during the soak, Turnstile on these CPUs (e.g. 0) and everything else on the others",
    )
    parser.add_argument(
        "--save", metavar="DIR", help="keep each valid review's times (valid, sent) and the server's (request-times)"
    )
    parser.add_argument(
        "--no-server-times", action="store_true", help="do not have the server note its own time for each request"
    )
    args = parser.parse_args()
    if args.no_autogroups:
        os.environ[NO_AUTOGROUPS_ENV] = "1"
    sys.exit(run(args))


if __name__ == "__main__":
    main()
