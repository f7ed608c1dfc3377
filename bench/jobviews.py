"""Cost of reading 50,000 batch Jobs through their typed views, beside the dict reads they replace and a decode.

Each Job is what the API server sends for a suspended, queued Job (``managedFields`` included, a full pod
template). For each contender, the same reads a reconcile pass makes of a Job (suspended, stopping, pod count,
active pods, its conditions, its queue label and its template's containers):

- ``dicts``: the ``.get(...) or {}`` chains the adapters held before the views;
- ``views``: ``BatchJob.of`` (the wrapper: the object split once into metadata, spec and status) then its
  accessors; ``views-decode-only`` is the wrapping alone;
- ``views-cached``: the view as the reconciler now takes it, from the cache (``ClusterCache.view``, made once per
  stored version: here by an earlier pass over the same versions), then the same accessors;
- ``msgspec``: ``msgspec.convert`` of the dicts into frozen Structs of the same fields (the template kept as a
  dict), then the same reads: the alternative the views were measured against.

Medians of ``--trials`` runs, alternating contenders, per list and per Job. Printed, never asserted.
Usage: ``.venv/bin/python -m bench.jobviews [--items 50000 --trials 5]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from bench.machine import describe
from webhook.api.constants import QUEUE_NAME_LABEL, STOPPING_ANNOTATION
from webhook.api.views import BatchJob
from webhook.controller.cache import ClusterCache
from webhook.kube import resources as r

WHEN = "2026-01-01T00:00:00Z"


def job(i: int) -> dict[str, Any]:
    """One suspended, queued Job as the API server returns it (managedFields included)."""
    managed = [
        {
            "apiVersion": "batch/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:parallelism": {}, "f:suspend": {}, "f:template": {"f:spec": {}}}},
            "manager": "kubectl-create",
            "operation": "Update",
            "time": WHEN,
        }
    ]
    template = {
        "metadata": {"labels": {"app": "sample", "batch.kubernetes.io/job-name": f"sample-{i}"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/batch/sample:1.2.3",
                    "resources": {"requests": {"cpu": "1", "memory": "200Mi"}},
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"sample-{i}",
            "namespace": f"team-{i % 20}",
            "uid": f"10000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": WHEN,
            "labels": {QUEUE_NAME_LABEL: "user-queue"},
            "annotations": {"kueue.x-k8s.io/workload-name": f"job-sample-{i}-5f8a1"},
            "managedFields": managed,
        },
        "spec": {"parallelism": 4, "completions": 4, "backoffLimit": 6, "suspend": True, "template": template},
        "status": {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended"}]},
    }


def read_dicts(obj: dict[str, Any]) -> tuple[object, ...]:
    spec, status, meta = obj.get("spec") or {}, obj.get("status") or {}, obj.get("metadata") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    count = parallelism if completions is None else min(parallelism, int(completions))
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    return (
        bool(spec.get("suspend")),
        STOPPING_ANNOTATION in (meta.get("annotations") or {}),
        count,
        bool(status.get("active")),
        [c.get("type") for c in status.get("conditions") or []],
        (meta.get("labels") or {}).get(QUEUE_NAME_LABEL),
        (pod_spec.get("containers"), pod_spec.get("initContainers")),
    )


def read_view(obj: dict[str, Any]) -> tuple[object, ...]:
    return reads(BatchJob.of(obj))


def reads(view: BatchJob) -> tuple[object, ...]:
    return (
        view.suspend,
        STOPPING_ANNOTATION in view.annotations,
        view.pod_count,
        bool(view.active),
        [c.get("type") for c in view.conditions],
        view.label(QUEUE_NAME_LABEL),
        view.template.containers,
    )


class _Meta(msgspec.Struct, frozen=True):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class _Spec(msgspec.Struct, frozen=True):
    suspend: bool = False
    parallelism: int | None = None
    completions: int | None = None
    template: dict[str, Any] = {}


class _Condition(msgspec.Struct, frozen=True):
    type: str
    status: str


class _Status(msgspec.Struct, frozen=True):
    active: int = 0
    conditions: tuple[_Condition, ...] = ()


class _Job(msgspec.Struct, frozen=True):
    metadata: _Meta = _Meta()
    spec: _Spec = _Spec()
    status: _Status = _Status()


def read_msgspec(obj: dict[str, Any]) -> tuple[object, ...]:
    decoded = msgspec.convert(obj, _Job)
    spec = decoded.spec
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    count = parallelism if spec.completions is None else min(parallelism, spec.completions)
    pod_spec = spec.template.get("spec") or {}
    return (
        spec.suspend,
        STOPPING_ANNOTATION in decoded.metadata.annotations,
        count,
        bool(decoded.status.active),
        [c.type for c in decoded.status.conditions],
        decoded.metadata.labels.get(QUEUE_NAME_LABEL),
        (pod_spec.get("containers"), pod_spec.get("initContainers")),
    )


def timed(read: Callable[[dict[str, Any]], object], jobs: list[dict[str, Any]]) -> float:
    gc.collect()
    start = time.perf_counter()
    for obj in jobs:
        read(obj)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    jobs = [job(i) for i in range(args.items)]
    assert read_dicts(jobs[0]) == read_view(jobs[0]), "the contenders must read the same values"
    cache = ClusterCache([r.JOB])
    cache.replace(r.JOB, jobs)
    stored = cache.jobs()  # the cache's own dicts (without managedFields): what the reconciler is handed

    def read_cached(obj: dict[str, Any]) -> tuple[object, ...]:
        return reads(cache.view(r.JOB, obj, BatchJob))

    timed(read_cached, stored)  # the first pass makes the views
    contenders: dict[str, Callable[[dict[str, Any]], object]] = {
        "dicts": read_dicts,
        "views": read_view,
        "views-decode-only": BatchJob.of,
        "views-cached": read_cached,
        "msgspec": read_msgspec,
    }
    runs: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.trials):
        for name, read in contenders.items():
            runs[name].append(timed(read, stored if name == "views-cached" else jobs))
    print(describe())
    print(f"{'contender':<20} {'list (ms)':>10} {'per Job (us)':>13}")
    for name, times in runs.items():
        median = statistics.median(times)
        print(f"{name:<20} {median * 1e3:>10.1f} {median / args.items * 1e6:>13.2f}")


if __name__ == "__main__":
    main()
