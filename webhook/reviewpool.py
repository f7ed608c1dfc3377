"""Review worker processes: large AdmissionReviews are decoded and judged off the serving loop.

Owns: ``ReviewPool`` (parent side) and ``worker_main`` (the worker). Decoding a 1.5 MiB review takes 20-70 ms in
orjson, which holds the interpreter lock the whole time, so neither a coroutine nor a thread keeps the serving loop
free: only another process does. The server sends each review over ``routes.OFFLOAD_BYTES`` to an idle worker with
its endpoint's path; the worker runs the same ``answering.answer`` as the serving loop, and each question its
policy asks of the cluster (``ClusterView``) comes back over the pipe and is answered from this process's cache by
the thread waiting on that worker. So a worker holds no cache and no API connection, and starts in a second.

At most ``workers`` large reviews are judged at once and ``max_waiting`` wait (each holds its body, at most 3 MiB);
beyond that a large review is answered 429 at once. A worker that dies is replaced, and its review answered 503.
Workers die with this process (``PR_SET_PDEATHSIG``) and when their pipe closes. Must not: hold policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any, Final

import orjson

from webhook import childprocess
from webhook.admission import answering
from webhook.admission.endpoints import ENDPOINTS, Endpoint
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import ClusterView
from webhook.api.views import WorkloadRecord
from webhook.jobs.poddefaults import PodDefaults

log = logging.getLogger(__name__)

TOO_MANY: Final = 429
# Large reviews are rare and may take a little longer; the small ones on the serving loop go first for the CPU.
WORKER_NICENESS: Final = 5
UNAVAILABLE: Final = 503


class _Worker:
    def __init__(self, process: childprocess.Child, conn: Connection) -> None:
        self.process = process
        self.conn = conn


class ReviewPool:
    def __init__(
        self,
        *,
        options: AdmissionOptions,
        view: ClusterView,
        workers: int = 1,
        max_waiting: int = 16,
        log_level: str = "INFO",
        json_logs: bool = True,
    ) -> None:
        self._options = options
        self._view = view
        self._size = workers
        self._max_waiting = max_waiting
        self._log_args = (log_level, json_logs)
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._all: list[_Worker] = []
        self._waiting = 0
        self.answered = 0
        self.refused = 0

    @property
    def processes(self) -> list[childprocess.Child]:
        return [worker.process for worker in self._all]

    async def start(self) -> None:
        for _ in range(self._size):
            self._idle.put_nowait(self._spawn())

    def _spawn(self) -> _Worker:
        # From the loop's thread: PR_SET_PDEATHSIG is tied to the thread that started the child.
        process, ours = childprocess.start(
            worker_main, self._options, os.getpid(), *self._log_args, name="turnstile-review-worker"
        )
        worker = _Worker(process, ours)
        self._all.append(worker)
        return worker

    async def answer(self, endpoint: Endpoint, body: bytes) -> tuple[int, bytes]:
        """The same status and body as ``answering.answer``, computed in a worker."""
        if self._waiting >= self._max_waiting:
            self.refused += 1
            return TOO_MANY, orjson.dumps({"reason": "too many large reviews in flight; retry"})
        self._waiting += 1
        try:
            worker = await self._idle.get()
        finally:
            self._waiting -= 1
        try:
            result = await asyncio.to_thread(self._exchange, worker, endpoint.path, body)
        except (EOFError, OSError) as exc:
            log.error("review worker %s failed (%s); starting another", worker.process.pid, exc)
            self._retire(worker)
            worker = self._spawn()
            return UNAVAILABLE, orjson.dumps({"reason": "the review worker failed; retry"})
        finally:
            self._idle.put_nowait(worker)
        self.answered += 1
        return result

    def _exchange(self, worker: _Worker, path: str, body: bytes) -> tuple[int, bytes]:
        """On a thread: sends the review, answers the policy's questions from the view, returns the answer."""
        conn = worker.conn
        conn.send(path)
        conn.send_bytes(body)
        while True:
            kind, *rest = conn.recv()
            if kind == "view":
                name, args = rest
                conn.send(getattr(self._view, name)(*args))
                continue
            status: int = rest[0]
            return status, conn.recv_bytes()

    def _retire(self, worker: _Worker) -> None:
        with contextlib.suppress(OSError):
            worker.conn.close()
        if worker.process.is_alive():
            worker.process.kill()
        with contextlib.suppress(ValueError):
            self._all.remove(worker)

    async def close(self) -> None:
        for worker in list(self._all):
            with contextlib.suppress(OSError):
                worker.conn.close()  # the worker sees EOF and exits
        for worker in list(self._all):
            await asyncio.to_thread(worker.process.join, 5.0)
            if worker.process.is_alive():
                worker.process.kill()
        self._all.clear()


class _ProxyView:
    """A ``ClusterView`` whose every answer comes from the parent over the pipe."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def _ask(self, name: str, *args: object) -> Any:
        self._conn.send(("view", name, args))
        return self._conn.recv()

    def synced(self) -> bool:
        return bool(self._ask("synced"))

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        answer: Mapping[str, str] | None = self._ask("namespace_labels", name)
        return answer

    def has_local_queue(self, namespace: str, name: str) -> bool:
        return bool(self._ask("has_local_queue", namespace, name))

    def cohort_parents(self) -> Mapping[str, str | None]:
        answer: Mapping[str, str | None] = self._ask("cohort_parents")
        return answer

    def has_workload_priority_class(self, name: str) -> bool:
        return bool(self._ask("has_workload_priority_class", name))

    def workload_is_admitted(self, namespace: str, name: str) -> bool:
        return bool(self._ask("workload_is_admitted", namespace, name))

    def workload(self, namespace: str, name: str) -> WorkloadRecord | None:
        answer: WorkloadRecord | None = self._ask("workload", namespace, name)
        return answer

    def pod_defaults(self, namespace: str) -> PodDefaults:
        answer: PodDefaults = self._ask("pod_defaults", namespace)
        return answer


def worker_main(conn: Connection, options: AdmissionOptions, parent: int, log_level: str, json_logs: bool) -> None:
    childprocess.die_with_parent(parent)
    # Signals to the process group are the parent's: the worker ends when its pipe closes (or with the parent).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    childprocess.background_priority(WORKER_NICENESS)
    from webhook import logs

    logs.configure(log_level, json=json_logs)
    endpoints = {endpoint.path: endpoint for endpoint in ENDPOINTS}
    view = _ProxyView(conn)
    while True:
        try:
            path = conn.recv()
            body = conn.recv_bytes()
        except (EOFError, OSError):
            return
        status, payload = answering.answer(endpoints[path], body, view, options)
        del body
        conn.send(("done", status))
        conn.send_bytes(payload)
