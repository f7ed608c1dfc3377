"""Kueue's PendingWorkloadsSummary from one scheduling pass: order, 0-based positions, limit and offset."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.unit.visibility import wire
from webhook.core.scheduler import schedule
from webhook.core.snapshotparse import SnapshotParser
from webhook.visibility import summary

NOW = datetime(2026, 1, 1, 1, tzinfo=UTC)


def pending_of(workloads: list[wire.JSON]) -> summary.PendingQueues:
    objects = {
        "cluster_queues": [wire.cluster_queue("cq", {"default": {"cpu": "1"}})],
        "flavors": [wire.flavor("default")],
        "local_queues": [wire.local_queue("a", "lq", "cq"), wire.local_queue("b", "lq", "cq")],
        "workloads": workloads,
    }
    result = schedule(SnapshotParser().snapshot(**objects), now=NOW)
    by_key = {(w["metadata"]["namespace"], w["metadata"]["name"]): w for w in workloads}
    return summary.PendingQueues(result, by_key)


WORKLOADS = [
    wire.workload("a", "running", queue="lq", admitted_to="cq"),
    wire.workload("a", "old", queue="lq", created="2026-01-01T00:00:01Z"),
    wire.workload("b", "other", queue="lq", created="2026-01-01T00:00:02Z"),
    wire.workload("a", "young", queue="lq", created="2026-01-01T00:00:03Z"),
    wire.workload("b", "urgent", queue="lq", priority=100, created="2026-01-01T00:00:04Z"),
]


def rows(body: wire.JSON) -> list[tuple[str, int, int]]:
    return [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in body["items"]]


def test_cluster_queue_lists_in_scheduler_order_with_both_positions() -> None:
    pending = pending_of(WORKLOADS).cluster_queue("cq")
    body = summary.cluster_queue_summary("v1beta2", pending, limit=1000, offset=0)
    assert body["kind"] == "PendingWorkloadsSummary"
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    assert rows(body) == [("urgent", 0, 0), ("old", 1, 0), ("other", 2, 1), ("young", 3, 1)]
    first = body["items"][0]
    assert first["priority"] == 100
    assert first["localQueueName"] == "lq"
    assert first["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "urgent", "uid": "job-urgent"}
    ]


def test_window_keeps_absolute_positions() -> None:
    pending = pending_of(WORKLOADS).cluster_queue("cq")
    body = summary.cluster_queue_summary("v1beta1", pending, limit=2, offset=1)
    assert rows(body) == [("old", 1, 0), ("other", 2, 1)]


def test_local_queue_lists_only_its_own_and_offsets_within_it() -> None:
    pending = pending_of(WORKLOADS).cluster_queue("cq")
    body = summary.local_queue_summary("v1beta2", pending, namespace="a", name="lq", limit=1000, offset=0)
    assert rows(body) == [("old", 1, 0), ("young", 3, 1)]
    body = summary.local_queue_summary("v1beta2", pending, namespace="a", name="lq", limit=1, offset=1)
    assert rows(body) == [("young", 3, 1)]


def test_an_unknown_queue_has_nothing_pending() -> None:
    assert pending_of(WORKLOADS).cluster_queue("nope") == ()


@pytest.mark.parametrize(
    ("query", "window"),
    [
        pytest.param({}, (1000, 0), id="kueue-defaults"),
        pytest.param({"limit": "5", "offset": "2"}, (5, 2), id="given"),
        pytest.param({"limit": "-3", "offset": "-1"}, (0, 0), id="negative-bounded"),
        pytest.param({"limit": "1000000"}, (100_000, 0), id="capped"),
    ],
)
def test_window_parsing(query: dict[str, str], window: tuple[int, int]) -> None:
    assert summary.parse_window(query) == window


def test_window_must_be_integers() -> None:
    with pytest.raises(ValueError, match="integers"):
        summary.parse_window({"limit": "ten"})
