"""Microseconds per AdmissionReview answered in-process: the body decoded, the policy asked, the answer encoded.

The webhook's request path without HTTP or TLS (``answering.answer``, what the route and a review worker call), on
a static cluster view, for the reviews the API server sends most: a batch/v1 Job CREATE to the mutating webhook
(the hot path), a Job UPDATE to the validating one (an unsuspend refused, and a label change allowed), a Pod CREATE
and UPDATE, and the Workload status write that admits it (the reconciler's, through the Workload webhook).
``decode`` alone is ``review.decode`` of the Job CREATE body. Each case runs ``--number`` answers per repeat; the
minimum and median of the repeats are printed (the minimum is the least disturbed by other processes on a loaded
machine). Printed, never asserted. Usage: ``.venv/bin/python -m bench.review``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from bench.machine import describe
from webhook.admission import answering, endpoints, review
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView

NS = "team-a"
QUEUE = "kueue.x-k8s.io/queue-name"


def job(*, suspend: bool = True, labels: dict[str, str] | None = None) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "pi",
            "namespace": NS,
            "labels": {QUEUE: "user-queue", **(labels or {})},
            "annotations": {"note": "bench"},
        },
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "suspend": suspend,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def pod(*, gated: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if gated:
        spec["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    labels = {QUEUE: "user-queue", "kueue.x-k8s.io/managed": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p-0", "namespace": NS, "labels": labels},
        "spec": spec,
    }


def workload(*, admitted: bool) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    meta = {
        "name": "job-pi-1a2b3",
        "namespace": NS,
        "labels": {"kueue.x-k8s.io/job-uid": "5d1c"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "5d1c", "controller": True}],
        "managedFields": [{"manager": "turnstile", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
    }
    template = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    status: dict[str, Any] = {}
    if admitted:
        when = "2026-01-01T00:00:00Z"
        status["conditions"] = [
            {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": when}
            for t in ("QuotaReserved", "Admitted")
        ]
        assignment = {"name": "main", "count": 2, "flavors": {"cpu": "pool"}, "resourceUsage": {"cpu": "2"}}
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": [assignment]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 2, "template": template}]},
        "status": status,
    }


def body(obj: dict[str, Any], *, old: dict[str, Any] | None = None, group: str = "batch", kind: str = "Job") -> bytes:
    request = {
        "uid": "00000000-0000-4000-8000-000000000001",
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": kind.lower() + "s"},
        "operation": "UPDATE" if old is not None else "CREATE",
        "namespace": NS,
        "name": obj["metadata"]["name"],
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


def cases() -> dict[str, Callable[[], object]]:
    options = AdmissionOptions(frameworks=AdmissionOptions().frameworks | {"pod"})
    view = StaticView(namespaces={NS: {}}, local_queues={(NS, "user-queue")})
    on = {(e.kind, e.mutating): e for e in endpoints.enabled(options)}
    create = body(job(suspend=False))
    unsuspend = body(job(suspend=False), old=job())
    relabel = body(job(labels={"team": "b"}), old=job())
    pod_create = body(pod(gated=False), group="", kind="Pod")
    pod_update = body(pod(), old=pod(), group="", kind="Pod")
    admit = body(workload(admitted=True), old=workload(admitted=False), group="kueue.x-k8s.io", kind="Workload")

    def answered(kind: str, mutating: bool, raw: bytes, allowed: bool) -> Callable[[], object]:
        endpoint = on[(kind, mutating)]
        status, answer = answering.answer(endpoint, raw, view, options)
        if status != 200 or orjson.loads(answer)["response"]["allowed"] is not allowed:
            raise RuntimeError(f"{endpoint.path}: unexpected answer {status} {answer!r}")
        return lambda: answering.answer(endpoint, raw, view, options)

    return {
        "decode (Job CREATE body)": lambda: review.decode(create),
        "mutate Job CREATE": answered("Job", True, create, True),
        "validate Job UPDATE, unsuspend refused": answered("Job", False, unsuspend, False),
        "validate Job UPDATE, label added": answered("Job", False, relabel, True),
        "mutate Pod CREATE": answered("Pod", True, pod_create, True),
        "validate Pod UPDATE": answered("Pod", False, pod_update, True),
        "validate Workload status UPDATE, admitted": answered("Workload", False, admit, True),
    }


def measure(call: Callable[[], object], *, number: int, repeat: int) -> tuple[float, float]:
    """(minimum, median) microseconds per call over ``repeat`` runs of ``number`` calls."""
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            call()
        runs.append((time.perf_counter() - started) / number * 1e6)
    return min(runs), statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(describe())
    for name, call in cases().items():
        best, median = measure(call, number=args.number, repeat=args.repeat)
        print(f"{name:42s} min {best:7.1f} us   median {median:7.1f} us")


if __name__ == "__main__":
    main()
