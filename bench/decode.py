"""Decode cost of a 50,000-Workload list, by library: the measurement behind the typed model (issue 15).

The list is what the API server answers to ``GET .../workloads`` for v1beta2: every item with its
``managedFields``, labels, owner reference, finalizer, one pod set with a full pod template, a priority class
reference, and a status with conditions and an admission. Each contender decodes the same bytes into the fields
the controller reads (metadata, spec.queueName/active/priority/maximumExecutionTimeSeconds, status.conditions,
status.admission.clusterQueue, requeueState), unknown fields ignored:

- ``msgspec``: frozen ``msgspec.Struct`` types, ``msgspec.json.decode(body, type=WorkloadList)``;
- ``msgspec-convert``: ``orjson.loads`` then ``msgspec.convert`` of the dicts (what an informer holding dicts pays);
- ``pydantic``: frozen pydantic v2 models, ``WorkloadList.model_validate_json(body)``;
- ``json`` and ``orjson``: plain dicts, no types (today's code).

Medians of ``--trials`` runs, per list and per object, with the machine. Printed, never asserted.
Usage: ``.venv/bin/python -m bench.decode [--items 50000 --trials 5]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec
import orjson
import pydantic
from pydantic.alias_generators import to_camel

from bench.machine import describe

WHEN = "2026-01-01T00:00:00Z"


def workload(i: int) -> dict[str, Any]:
    """One admitted Workload as the API server returns it in a list (v1beta2, managedFields included)."""
    uid = f"00000000-0000-4000-8000-{i:012d}"
    managed = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:finalizers": {".": {}, 'v:"kueue.x-k8s.io/resource-in-use"': {}}},
                "f:spec": {"f:podSets": {}, "f:queueName": {}, "f:priority": {}, "f:priorityClassRef": {}},
            },
            "manager": "turnstile",
            "operation": "Update",
            "time": WHEN,
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:admission": {}, "f:conditions": {}}},
            "manager": "turnstile",
            "operation": "Update",
            "subresource": "status",
            "time": WHEN,
        },
    ]
    metadata = {
        "name": f"job-sample-{i}-5f8a1",
        "namespace": f"team-{i % 20}",
        "uid": uid,
        "resourceVersion": str(100000 + i),
        "generation": 1,
        "creationTimestamp": WHEN,
        "labels": {"kueue.x-k8s.io/job-uid": uid, "kueue.x-k8s.io/queue-name": "user-queue"},
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": f"sample-{i}",
                "uid": f"10000000-0000-4000-8000-{i:012d}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": managed,
    }
    template = {
        "metadata": {"labels": {"app": "sample"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/batch/sample:1.2.3",
                    "args": ["--steps", "1000"],
                    "resources": {"requests": {"cpu": "1", "memory": "200Mi"}, "limits": {"memory": "200Mi"}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        },
    }
    spec = {
        "active": True,
        "queueName": "user-queue",
        "priority": 100,
        "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
        "podSets": [{"name": "main", "count": 4, "template": template}],
    }
    status = {
        "conditions": [
            {
                "type": t,
                "status": "True",
                "reason": t,
                "message": m,
                "lastTransitionTime": WHEN,
                "observedGeneration": 1,
            }
            for t, m in (
                ("QuotaReserved", "Quota reserved in ClusterQueue cq"),
                ("Admitted", "The workload is admitted"),
            )
        ],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "default", "memory": "default"},
                    "resourceUsage": {"cpu": "4", "memory": "800Mi"},
                    "count": 4,
                }
            ],
        },
        "requeueState": {"count": 1},
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def workload_list(items: int) -> bytes:
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadList",
        "metadata": {"resourceVersion": "200000"},
        "items": [workload(i) for i in range(items)],
    }
    return orjson.dumps(body)


# -- msgspec: the fields the controller reads, frozen ------------------------------------------------------------


class MOwner(msgspec.Struct, frozen=True, rename="camel"):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class MMeta(msgspec.Struct, frozen=True, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: str = ""
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    finalizers: tuple[str, ...] = ()
    owner_references: tuple[MOwner, ...] = ()


class MSpec(msgspec.Struct, frozen=True, rename="camel"):
    queue_name: str = ""
    active: bool = True
    priority: int = 0
    maximum_execution_time_seconds: int | None = None


class MCondition(msgspec.Struct, frozen=True, rename="camel"):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


class MAdmission(msgspec.Struct, frozen=True, rename="camel"):
    cluster_queue: str = ""


class MRequeue(msgspec.Struct, frozen=True, rename="camel"):
    count: int = 0
    requeue_at: str | None = None


class MStatus(msgspec.Struct, frozen=True, rename="camel"):
    conditions: tuple[MCondition, ...] = ()
    admission: MAdmission | None = None
    requeue_state: MRequeue | None = None


class MWorkload(msgspec.Struct, frozen=True):
    metadata: MMeta
    spec: MSpec = MSpec()
    status: MStatus = MStatus()


class MList(msgspec.Struct, frozen=True):
    items: tuple[MWorkload, ...]


# -- pydantic v2: the same shape ----------------------------------------------------------------------------------

_P = pydantic.ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)


class POwner(pydantic.BaseModel):
    model_config = _P
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class PMeta(pydantic.BaseModel):
    model_config = _P
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: str = ""
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    finalizers: tuple[str, ...] = ()
    owner_references: tuple[POwner, ...] = ()


class PSpec(pydantic.BaseModel):
    model_config = _P
    queue_name: str = ""
    active: bool = True
    priority: int = 0
    maximum_execution_time_seconds: int | None = None


class PCondition(pydantic.BaseModel):
    model_config = _P
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


class PAdmission(pydantic.BaseModel):
    model_config = _P
    cluster_queue: str = ""


class PRequeue(pydantic.BaseModel):
    model_config = _P
    count: int = 0
    requeue_at: str | None = None


class PStatus(pydantic.BaseModel):
    model_config = _P
    conditions: tuple[PCondition, ...] = ()
    admission: PAdmission | None = None
    requeue_state: PRequeue | None = None


class PWorkload(pydantic.BaseModel):
    model_config = _P
    metadata: PMeta
    spec: PSpec = PSpec()
    status: PStatus = PStatus()


class PList(pydantic.BaseModel):
    model_config = _P
    items: tuple[PWorkload, ...]


def contenders() -> dict[str, Callable[[bytes], int]]:
    msgspec_decoder = msgspec.json.Decoder(MList)
    return {
        "msgspec": lambda body: len(msgspec_decoder.decode(body).items),
        "msgspec-convert": lambda body: len(msgspec.convert(orjson.loads(body), MList).items),
        "pydantic": lambda body: len(PList.model_validate_json(body).items),
        "json": lambda body: len(json.loads(body)["items"]),
        "orjson": lambda body: len(orjson.loads(body)["items"]),
    }


def check(body: bytes) -> None:
    """The typed decoders read the same values (a benchmark of a decoder that reads nothing would be a lie)."""
    m = msgspec.json.decode(body, type=MList).items[7]
    p = PList.model_validate_json(body).items[7]
    d = orjson.loads(body)["items"][7]
    assert m.metadata.name == p.metadata.name == d["metadata"]["name"]
    assert m.metadata.owner_references[0].controller is p.metadata.owner_references[0].controller is True
    assert m.status.admission is not None
    assert p.status.admission is not None
    assert m.status.admission.cluster_queue == p.status.admission.cluster_queue == "cq"
    assert (
        [c.type for c in m.status.conditions] == [c.type for c in p.status.conditions] == ["QuotaReserved", "Admitted"]
    )


def machine() -> str:
    return describe(f"msgspec {msgspec.__version__}", f"pydantic {pydantic.VERSION}", f"orjson {orjson.__version__}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    body = workload_list(args.items)
    check(body)
    print(machine())
    print(f"{args.items} Workloads, {len(body) / 1e6:.1f} MB; medians of {args.trials} trials")
    print(f"{'decoder':<16} {'list ms':>9} {'us/object':>10}")
    for name, decode in contenders().items():
        times = []
        for _ in range(args.trials):
            gc.collect()
            started = time.perf_counter()
            count = decode(body)
            times.append(time.perf_counter() - started)
            assert count == args.items
        median = statistics.median(times)
        print(f"{name:<16} {median * 1000:>9.0f} {median / args.items * 1e6:>10.2f}")


if __name__ == "__main__":
    main()
