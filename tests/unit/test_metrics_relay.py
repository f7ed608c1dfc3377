"""The reconciler process's metric families, relayed to the webhook process, render as one valid page."""

from __future__ import annotations

import asyncio
import pickle

import pytest
from prometheus_client.parser import text_string_to_metric_families

from webhook import metrics as metrics_module
from webhook.metrics import Metrics


def _families(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {f.name: [(s.name, s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def test_relayed_families_show_beside_our_own_once_each() -> None:
    reconciler = Metrics(replica_role="leader")
    reconciler.admission_attempt("success", 0.01)
    reconciler.set_pending("cq", active=3, inadmissible=1)
    webhook = Metrics(replica_role="leader")
    webhook.observe_webhook("/mutate/batch/v1/jobs", 200, 0.001)

    webhook.relay(pickle.loads(pickle.dumps(reconciler.families())))  # as it crosses the pipe
    text = webhook.render().decode()
    families = _families(text)  # the parser refuses a page with a family twice

    assert ("kueue_pending_workloads", {"cluster_queue": "cq", "status": "active", "replica_role": "leader"}, 3.0) in (
        families["kueue_pending_workloads"]
    )
    assert any(s[0] == "turnstile_webhook_requests_total" for s in families["turnstile_webhook_requests"])
    assert any(s[0] == "kueue_admission_attempts_total" for s in families["kueue_admission_attempts"])
    assert [line for line in text.splitlines() if line.startswith("# TYPE kueue_build_info ")] == [
        "# TYPE kueue_build_info gauge"
    ]
    assert len([s for s in families["kueue_build_info"]]) == 1  # ours wins: one replica, one build


def test_an_empty_relay_leaves_our_own_page() -> None:
    webhook = Metrics()
    webhook.observe_webhook("/validate/batch/v1/jobs", 400, 0.001)
    webhook.relay({})
    assert webhook.render() == Metrics.render(webhook)
    assert "turnstile_webhook_requests_total" in webhook.render().decode()


def test_a_scrape_pulls_the_other_process_families_first() -> None:
    reconciler = Metrics(replica_role="leader")
    webhook = Metrics(replica_role="leader")
    asked = 0

    async def source() -> None:  # the parent asks the child; its answer arrives through relay
        nonlocal asked
        asked += 1
        reconciler.admission_attempt("success", 0.01)
        webhook.relay(reconciler.families())

    webhook.relay_from(source)
    asyncio.run(webhook.refresh())
    first = _families(webhook.render().decode())["kueue_admission_attempts"]
    asyncio.run(webhook.refresh())
    second = _families(webhook.render().decode())["kueue_admission_attempts"]

    assert asked == 2
    count = "kueue_admission_attempts_total"
    assert [s[2] for s in first if s[0] == count] == [1.0]
    assert [s[2] for s in second if s[0] == count] == [2.0]  # fresh per scrape, not a stale copy


def test_a_source_that_does_not_answer_leaves_the_last_families(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_module, "RELAY_TIMEOUT_SECONDS", 0.05)
    reconciler = Metrics(replica_role="leader")
    reconciler.set_pending("cq", active=3, inadmissible=1)
    webhook = Metrics(replica_role="leader")
    webhook.relay(reconciler.families())

    async def silent() -> None:
        await asyncio.Event().wait()

    webhook.relay_from(silent)
    asyncio.run(webhook.refresh())

    assert "kueue_pending_workloads" in _families(webhook.render().decode())
