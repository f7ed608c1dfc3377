"""The reconciler process's metric families, relayed to the webhook process, render as one valid page."""

from __future__ import annotations

import pickle

from prometheus_client.parser import text_string_to_metric_families

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
