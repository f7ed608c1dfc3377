"""Evictions other than preemption, as pure decisions: which one, in which precedence, and when to look again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from webhook.api import model
from webhook.api.configuration import RequeuingStrategy, WaitForPodsReady
from webhook.core import evictions
from webhook.core.evictions import Eviction, EvictionCheck, decide_eviction, reactivated

ADMITTED_AT = datetime(2026, 1, 1, tzinfo=UTC)
NOW = ADMITTED_AT + timedelta(seconds=100)
READY = WaitForPodsReady(enable=True, timeout_seconds=300)


def make_workload(
    *,
    admitted: bool = True,
    evicted: bool = False,
    pods_ready: bool = False,
    active: bool = True,
    max_exec: int | None = None,
    past: int = 0,
    requeues: int = 0,
    requeued: tuple[str, str] | None = None,
) -> model.Workload:
    when = ADMITTED_AT.strftime("%Y-%m-%dT%H:%M:%SZ")
    conds: list[dict[str, Any]] = []
    status: dict[str, Any] = {"conditions": conds}
    if admitted:
        conds += [{"type": t, "status": "True", "lastTransitionTime": when} for t in ("QuotaReserved", "Admitted")]
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]}
    if evicted:
        conds.append({"type": "Evicted", "status": "True", "reason": "Preempted"})
    if pods_ready:
        conds.append({"type": "PodsReady", "status": "True"})
    if requeued is not None:
        conds.append({"type": "Requeued", "status": requeued[0], "reason": requeued[1]})
    if past:
        status["accumulatedPastExecutionTimeSeconds"] = past
    if requeues:
        status["requeueState"] = {"count": requeues}
    spec: dict[str, Any] = {"queueName": "lq", "active": active}
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
    return model.decode_workload({"metadata": {"name": "w", "namespace": "ns"}, "spec": spec, "status": status})


def decide(wl: model.Workload, **kwargs: Any) -> EvictionCheck:
    return decide_eviction(wl, now=NOW, **kwargs)


@pytest.mark.parametrize(
    ("wl", "kwargs", "expected"),
    [
        pytest.param(make_workload(admitted=False, active=False), {}, EvictionCheck(), id="pending-is-left-alone"),
        pytest.param(make_workload(evicted=True, active=False), {}, EvictionCheck(), id="already-evicted"),
        pytest.param(make_workload(), {}, EvictionCheck(), id="running-nothing-due"),
        pytest.param(
            make_workload(active=False, max_exec=10),
            {"cluster_queue_stop_policy": "HoldAndDrain"},
            EvictionCheck(Eviction("Deactivated", "The workload is deactivated")),
            id="deactivation-first",
        ),
        pytest.param(
            make_workload(max_exec=100),
            {"cluster_queue_stop_policy": "HoldAndDrain"},
            EvictionCheck(Eviction(evictions.MAX_EXEC_REASON, "Exceeded the maximum execution time", deactivate=True)),
            id="max-execution-time-reached-deactivates",
        ),
        pytest.param(
            make_workload(max_exec=150),
            {},
            EvictionCheck(due=ADMITTED_AT + timedelta(seconds=150)),
            id="max-execution-time-due-later",
        ),
        pytest.param(
            make_workload(max_exec=150, past=60),
            {},
            EvictionCheck(Eviction(evictions.MAX_EXEC_REASON, "Exceeded the maximum execution time", deactivate=True)),
            id="time-run-before-counts",
        ),
        pytest.param(
            make_workload(),
            {"cluster_queue_stop_policy": "HoldAndDrain", "local_queue_stop_policy": "HoldAndDrain"},
            EvictionCheck(Eviction("ClusterQueueStopped", "The ClusterQueue cq is stopped")),
            id="cluster-queue-drains",
        ),
        pytest.param(
            make_workload(),
            {"cluster_queue_stop_policy": "Hold", "local_queue_stop_policy": "HoldAndDrain"},
            EvictionCheck(Eviction("LocalQueueStopped", "The LocalQueue lq is stopped")),
            id="local-queue-drains-hold-does-not",
        ),
        pytest.param(
            make_workload(),
            {"pods_ready": READY},
            EvictionCheck(due=ADMITTED_AT + timedelta(seconds=300)),
            id="pods-ready-due",
        ),
        pytest.param(
            make_workload(max_exec=200),
            {"pods_ready": READY},
            EvictionCheck(due=ADMITTED_AT + timedelta(seconds=200)),
            id="earliest-of-two-deadlines",
        ),
        pytest.param(
            make_workload(pods_ready=True),
            {"pods_ready": WaitForPodsReady(enable=True, timeout_seconds=10)},
            EvictionCheck(),
            id="pods-ready-no-timeout",
        ),
        pytest.param(
            make_workload(),
            {"pods_ready": WaitForPodsReady(enable=False, timeout_seconds=10)},
            EvictionCheck(),
            id="wait-for-pods-ready-off",
        ),
    ],
)
def test_decide_eviction(wl: model.Workload, kwargs: dict[str, Any], expected: EvictionCheck) -> None:
    assert decide(wl, **kwargs) == expected


def test_pods_ready_timeout_requeues_with_backoff() -> None:
    ready = WaitForPodsReady(enable=True, timeout_seconds=10, requeuing=RequeuingStrategy(backoff_base_seconds=5))
    check = decide(make_workload(requeues=2), pods_ready=ready)
    assert check.eviction == Eviction(
        evictions.PODS_READY_TIMEOUT,
        "Pods not ready within 10s; requeued in 20s",
        requeue_at=NOW + timedelta(seconds=20),
    )


def test_pods_ready_timeout_past_the_limit_deactivates() -> None:
    strategy = RequeuingStrategy(backoff_limit_count=2)
    check = decide(make_workload(requeues=2), pods_ready=WaitForPodsReady(True, 10, strategy))
    assert check.eviction == Eviction(evictions.REQUEUING_LIMIT_REASON, "Requeuing limit exceeded", deactivate=True)


@pytest.mark.parametrize(
    ("count", "seconds"), [(0, 60.0), (1, 120.0), (3, 480.0), (10, 3600.0)], ids=["first", "second", "fourth", "cap"]
)
def test_backoff(count: int, seconds: float) -> None:
    assert evictions.backoff_seconds(count, base=60, cap=3600) == seconds


@pytest.mark.parametrize(
    ("wl", "expected"),
    [
        pytest.param(make_workload(admitted=False, requeued=("False", "Deactivated")), True, id="reactivated"),
        pytest.param(
            make_workload(admitted=False, active=False, requeued=("False", "Deactivated")), False, id="still-inactive"
        ),
        pytest.param(make_workload(requeued=("False", "Deactivated")), False, id="still-holds-quota"),
        pytest.param(make_workload(admitted=False, requeued=("True", "Deactivated")), False, id="already-requeued"),
        pytest.param(make_workload(admitted=False, requeued=("False", "Preempted")), False, id="other-reason"),
    ],
)
def test_reactivated(wl: model.Workload, expected: bool) -> None:
    assert reactivated(wl) is expected
