"""The typed Workload: decoded once from the API server's dict, and the predicates every layer shares."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from webhook.api import model, wire
from webhook.api.views import WorkloadRecord
from webhook.api.workload import parse_workload
from webhook.controller.cache import ClusterCache

WHEN = "2026-01-01T00:00:00Z"


def cond(type_: str, status: str = "True", reason: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason or type_, "message": "m", "lastTransitionTime": WHEN}


def make_workload(*conds: dict[str, Any], admission: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conds)}
    if admission is not None:
        status["admission"] = admission
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "managedFields": [{"manager": "x"}]},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}], **spec},
        "status": status,
    }


ADMISSION = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1}]}


@pytest.mark.parametrize(
    ("obj", "holds", "runs", "admitted", "finished", "evicted"),
    [
        pytest.param(make_workload(), False, False, False, False, False, id="pending"),
        pytest.param(
            make_workload(cond("QuotaReserved"), admission=ADMISSION), True, False, True, False, False, id="reserved"
        ),
        pytest.param(
            make_workload(cond("QuotaReserved"), cond("Admitted"), admission=ADMISSION),
            True,
            True,
            True,
            False,
            False,
            id="admitted",
        ),
        pytest.param(
            make_workload(cond("Admitted"), cond("Finished"), admission=ADMISSION),
            False,
            False,
            True,
            True,
            False,
            id="finished-keeps-no-quota",
        ),
        pytest.param(
            make_workload(cond("Admitted"), cond("Evicted"), admission=ADMISSION),
            True,
            True,
            True,
            False,
            True,
            id="evicted-still-holds-until-released",
        ),
        pytest.param(
            make_workload(cond("QuotaReserved"), admission={}), False, False, False, False, False, id="empty-admission"
        ),
        pytest.param(
            make_workload(cond("Finished", "False"), cond("Finished")),
            False,
            False,
            False,
            False,
            False,
            id="first-wins",
        ),
    ],
)
def test_predicates(
    obj: dict[str, Any], holds: bool, runs: bool, admitted: bool, finished: bool, evicted: bool
) -> None:
    status = model.decode_workload(obj).status
    assert (status.holds_quota, status.runs_admitted, status.admitted) == (holds, runs, admitted)
    assert (status.finished, status.evicted) == (finished, evicted)
    # The job reconcilers ask the same definitions of the Workload's view, without decoding it.
    record = WorkloadRecord.of(obj)
    assert (record.holds_quota, record.runs_admitted) == (holds, runs)
    assert (record.finished, record.evicted) == (finished, evicted)
    assert ClusterCache.is_admitted(obj) is admitted


def test_admission_checks_hold_back_admitted() -> None:
    obj = make_workload(cond("QuotaReserved"), admission=ADMISSION)
    obj["status"]["admissionChecks"] = [{"name": "check", "state": "Pending"}]
    assert model.decode_workload(obj).status.admitted is False
    assert ClusterCache.is_admitted(obj) is False


def test_the_scheduler_view_answers_with_the_same_predicates() -> None:
    obj = make_workload(cond("QuotaReserved"), cond("Finished"), admission=ADMISSION)
    typed, view = model.decode_workload(obj).status, parse_workload(obj)
    assert (view.finished, view.holds_quota) == (typed.finished, typed.holds_quota) == (True, False)


def test_decode_reads_the_fields_and_ignores_the_rest() -> None:
    obj = make_workload(active=False, priority=7, maximumExecutionTimeSeconds=30)
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "x"}]
    wl = model.decode_workload(obj)
    assert wl.key == ("ns", "w")
    assert (wl.spec.active, wl.spec.priority, wl.spec.maximum_execution_time_seconds) == (False, 7, 30)
    assert wl.metadata.owner_references[0].group == "batch"
    assert wl.controller_owner() is None


def test_an_object_under_review_reads_its_metadata_owner_and_gates() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "labels": {"a": "1"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s", "uid": "2", "controller": True},
            ],
        },
        "spec": {"schedulingGates": [{"name": "other"}, {"name": "kueue.x-k8s.io/admission"}], "containers": []},
    }
    obj = msgspec.convert(pod, model.KubeObject)
    assert obj.metadata.labels == {"a": "1"}
    assert obj.metadata.annotations == {}
    owner = obj.metadata.controller_owner()
    assert owner is not None
    assert (owner.group, owner.kind) == ("apps", "StatefulSet")
    assert obj.spec.gated("kueue.x-k8s.io/admission")
    assert not obj.spec.gated("x")
    assert not model.KubeObject().spec.gated("kueue.x-k8s.io/admission")


def test_bad_input_names_the_field() -> None:
    obj = make_workload(priority="high")
    with pytest.raises(wire.InvalidObject, match=r"spec\.priority"):
        model.decode_workload(obj)


def test_queue_order_priority_then_age_then_uid() -> None:
    old, new = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    keys = {
        "low-old": model.queue_order(priority=1, created=old, uid="a", namespace="ns", name="z"),
        "high-new": model.queue_order(priority=5, created=new, uid="b", namespace="ns", name="y"),
        "high-old-b": model.queue_order(priority=5, created=old, uid="b", namespace="ns", name="a"),
        "high-old-a": model.queue_order(priority=5, created=old, uid="a", namespace="ns", name="b"),
    }
    assert sorted(keys, key=keys.__getitem__) == ["high-old-a", "high-old-b", "high-new", "low-old"]
