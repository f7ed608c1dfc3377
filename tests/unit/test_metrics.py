"""Metrics: Kueue's names and labels as Prometheus sees them (parsed back from the text exposition)."""

from __future__ import annotations

import math
from collections.abc import Callable

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pytest_aiohttp import AiohttpClient

from webhook.metrics import Metrics, metrics_app, serving

Sample = tuple[dict[str, str], float]


def samples(metrics: Metrics, name: str) -> list[Sample]:
    """Every sample called ``name`` in what a scrape would return."""
    text = metrics.render().decode()
    return [
        (dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]


def value(metrics: Metrics, name: str, **labels: str) -> float:
    """The one sample of ``name`` whose labels include ``labels``; fails if there is not exactly one."""
    found = [v for got, v in samples(metrics, name) if labels.items() <= got.items()]
    assert len(found) == 1, f"{name}{labels}: {samples(metrics, name)}"
    return found[0]


def test_registries_are_independent() -> None:
    a, b = Metrics(), Metrics()
    a.workload_admitted("cq", 1.0)
    assert value(a, "kueue_admitted_workloads_total", cluster_queue="cq") == 1
    assert samples(b, "kueue_admitted_workloads_total") == []


def test_every_series_carries_the_replica_role() -> None:
    m = Metrics(replica_role="leader")
    m.workload_admitted("cq", 3.0)
    m.set_pending("cq", 2, 1)
    m.observe_webhook("/mutate-batch-v1-job", 200, 0.0004)
    families = list(text_string_to_metric_families(m.render().decode()))
    ours = [s for f in families if f.name.startswith(("kueue_", "turnstile_")) for s in f.samples]
    assert ours
    assert all(s.labels.get("replica_role") == "leader" for s in ours), [
        s for s in ours if "replica_role" not in s.labels
    ]


@pytest.mark.parametrize(
    ("record", "name", "labels", "expected"),
    [
        pytest.param(
            lambda m: m.quota_reserved("cq", 4.0),
            "kueue_quota_reserved_workloads_total",
            {"cluster_queue": "cq"},
            1,
            id="quota-reserved",
        ),
        pytest.param(
            lambda m: m.workload_finished("cq"),
            "kueue_finished_workloads_total",
            {"cluster_queue": "cq"},
            1,
            id="finished",
        ),
        pytest.param(
            lambda m: m.workload_evicted("cq", "PodsReadyTimeout"),
            "kueue_evicted_workloads_total",
            {"cluster_queue": "cq", "reason": "PodsReadyTimeout"},
            1,
            id="evicted-with-reason",
        ),
        pytest.param(
            lambda m: m.workload_preempted("high", "InCohortReclamation"),
            "kueue_preempted_workloads_total",
            {"preempting_cluster_queue": "high", "reason": "InCohortReclamation"},
            1,
            id="preempted-by-preemptor-queue",
        ),
        pytest.param(
            lambda m: m.admission_attempt("inadmissible", 0.002),
            "kueue_admission_attempts_total",
            {"result": "inadmissible"},
            1,
            id="attempt",
        ),
        pytest.param(
            lambda m: m.set_active_workloads("cq", reserving=3, admitted=2),
            "kueue_reserving_active_workloads",
            {"cluster_queue": "cq"},
            3,
            id="reserving",
        ),
        pytest.param(
            lambda m: m.set_active_workloads("cq", reserving=3, admitted=2),
            "kueue_admitted_active_workloads",
            {"cluster_queue": "cq"},
            2,
            id="admitted-active",
        ),
        pytest.param(
            lambda m: m.webhook_error("/validate-batch-v1-job", "malformed"),
            "turnstile_webhook_errors_total",
            {"path": "/validate-batch-v1-job", "reason": "malformed"},
            1,
            id="webhook-error",
        ),
        pytest.param(
            lambda m: m.reconciler_pass(0.3),
            "turnstile_reconciler_pass_duration_seconds_sum",
            {},
            0.3,
            id="pass-duration",
        ),
        pytest.param(
            lambda m: m.set_information_share(0.25),
            "turnstile_information_write_share",
            {},
            0.25,
            id="information-share",
        ),
    ],
)
def test_kueue_names_and_labels(
    record: Callable[[Metrics], None], name: str, labels: dict[str, str], expected: float
) -> None:
    m = Metrics()
    record(m)
    assert value(m, name, **labels) == expected


def test_pending_is_split_into_active_and_inadmissible_and_overwritten() -> None:
    m = Metrics()
    m.set_pending("cq", 5, 2)
    m.set_pending("cq", 4, 0)
    assert value(m, "kueue_pending_workloads", cluster_queue="cq", status="active") == 4
    assert value(m, "kueue_pending_workloads", cluster_queue="cq", status="inadmissible") == 0


def test_admission_wait_is_a_histogram_with_kueue_buckets() -> None:
    m = Metrics()
    m.workload_admitted("cq", 3.0)
    m.workload_admitted("cq", 7.0)
    buckets = {
        labels["le"]: v
        for labels, v in samples(m, "kueue_admission_wait_time_seconds_bucket")
        if labels["cluster_queue"] == "cq"
    }
    assert buckets["1.0"] == 0
    assert buckets["2.5"] == 0
    assert buckets["5.0"] == 1
    assert buckets["10.0"] == 2
    assert buckets["+Inf"] == 2
    assert value(m, "kueue_admission_wait_time_seconds_sum", cluster_queue="cq") == 10.0


def test_webhook_latency_has_sub_millisecond_buckets() -> None:
    m = Metrics()
    m.observe_webhook("/mutate-batch-v1-job", 200, 0.0003)
    m.observe_webhook("/mutate-batch-v1-job", 400, 0.02)
    assert value(m, "turnstile_webhook_requests_total", path="/mutate-batch-v1-job", code="200") == 1
    assert value(m, "turnstile_webhook_requests_total", path="/mutate-batch-v1-job", code="400") == 1
    assert value(m, "turnstile_webhook_request_duration_seconds_bucket", le="0.0005") == 1
    assert value(m, "turnstile_webhook_request_duration_seconds_bucket", le="0.0001") == 0


def test_quota_limits_default_to_infinity() -> None:
    m = Metrics()
    m.set_cluster_queue_quota("cq", cohort="team", flavor="on-demand", resource="cpu", nominal=8, lending_limit=2)
    labels = {"cohort": "team", "cluster_queue": "cq", "flavor": "on-demand", "resource": "cpu"}
    assert value(m, "kueue_cluster_queue_nominal_quota", **labels) == 8
    assert math.isinf(value(m, "kueue_cluster_queue_borrowing_limit", **labels))
    assert value(m, "kueue_cluster_queue_lending_limit", **labels) == 2


def test_usage_and_reservation() -> None:
    m = Metrics()
    m.set_cluster_queue_usage("cq", flavor="spot", resource="memory", reserved=2**31, used=2**30)
    assert value(m, "kueue_cluster_queue_resource_reservation", flavor="spot", resource="memory") == 2**31
    assert value(m, "kueue_cluster_queue_resource_usage", flavor="spot", resource="memory") == 2**30


def test_cluster_queue_status_is_one_hot() -> None:
    m = Metrics()
    m.set_cluster_queue_status("cq", "pending")
    m.set_cluster_queue_status("cq", "active")
    got = {labels["status"]: v for labels, v in samples(m, "kueue_cluster_queue_status")}
    assert got == {"pending": 0, "active": 1, "terminated": 0}


def test_forget_cluster_queue_removes_only_its_series() -> None:
    m = Metrics()
    for cq in ("gone", "kept"):
        m.set_pending(cq, 1, 0)
        m.workload_admitted(cq, 1.0)
        m.workload_evicted(cq, "Preempted")
        m.set_cluster_queue_quota(cq, flavor="f", resource="cpu", nominal=1)
        m.set_cluster_queue_status(cq, "active")
    m.forget_cluster_queue("gone")
    text = m.render().decode()
    assert 'cluster_queue="gone"' not in text
    assert 'cluster_queue="kept"' in text
    m.forget_cluster_queue("never-seen")  # no error


def test_role_change_drops_queue_gauges_and_relabels_new_series() -> None:
    m = Metrics(replica_role="follower")
    m.set_pending("cq", 3, 0)
    m.observe_webhook("/validate", 200, 0.001)
    m.set_replica_role("leader")
    assert samples(m, "kueue_pending_workloads") == []
    assert value(m, "kueue_build_info", replica_role="leader") == 1
    assert [labels["replica_role"] for labels, _ in samples(m, "kueue_build_info")] == ["leader"]
    # counters are cumulative: the follower's series stays, new observations go to the leader's
    m.observe_webhook("/validate", 200, 0.001)
    assert value(m, "turnstile_webhook_requests_total", replica_role="follower") == 1
    assert value(m, "turnstile_webhook_requests_total", replica_role="leader") == 1
    m.set_pending("cq", 1, 0)
    m.forget_cluster_queue("cq")
    assert samples(m, "kueue_pending_workloads") == []


def test_build_info() -> None:
    m = Metrics(version="0.1.0", git_commit="abc123")
    assert value(m, "kueue_build_info", git_version="0.1.0", git_commit="abc123") == 1


async def test_metrics_app_serves_prometheus_text(aiohttp_client: AiohttpClient) -> None:
    m = Metrics()
    m.set_pending("cq", 7, 0)
    client = await aiohttp_client(metrics_app(m))
    response = await client.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert 'kueue_pending_workloads{cluster_queue="cq",replica_role="standalone",status="active"} 7.0' in (
        await response.text()
    )


async def test_serving_binds_a_port_and_stops() -> None:
    m = Metrics()
    async with serving(m, host="127.0.0.1", port=0) as port, aiohttp.ClientSession() as session:
        assert port > 0
        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
            assert response.status == 200
            assert "kueue_build_info" in await response.text()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"http://127.0.0.1:{port}/metrics")
