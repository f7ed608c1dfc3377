"""The dashboard's server-rendered HTML: bars against quota, pending lists in queue order, escaping."""

from __future__ import annotations

from tests.unit.visibility import wire
from webhook.dashboard import pages
from webhook.usercli.views import ClusterQueueView, QuotaRow
from webhook.visibility.summary import PendingEntry


def cq_view(name: str, *, cohort: str = "", percent: int | None = 50) -> ClusterQueueView:
    row = QuotaRow("default", "cpu", "4", None, None, "2", "2", "0", percent)
    return ClusterQueueView(name, cohort, "None", True, 1, 1, 1, (row,))


def entry(name: str) -> PendingEntry:
    return PendingEntry("team", name, "lq", 0, wire.workload("team", name, queue="lq"))


def test_queues_grouped_by_cohort_with_bars_and_pending_in_order() -> None:
    html = pages.queues_fragment(
        [cq_view("b", cohort="research"), cq_view("a", cohort="research"), cq_view("alone")],
        {"a": [entry("first"), entry("second")]},
    )
    assert html.index("No cohort") < html.index("Cohort research")  # "" sorts first
    assert html.index("ClusterQueue a") < html.index("ClusterQueue b")
    assert "style='width:50%'" in html
    assert "<td class='usage'>2 / 4</td>" in html
    assert html.index("team/first") < html.index("team/second")
    assert "<tr class='pending'><td>1</td>" in html


def test_over_quota_is_marked_and_capped() -> None:
    html = pages.cluster_queue_card(cq_view("x", percent=150), [])
    assert "class='fill over' style='width:100%'" in html
    assert "Nothing pending." in html


def test_long_pending_lists_are_cut() -> None:
    html = pages.cluster_queue_card(cq_view("x"), [entry(f"w{i}") for i in range(pages.PENDING_SHOWN + 5)])
    assert html.count("<tr class='pending'>") == pages.PENDING_SHOWN
    assert "and 5 more" in html


def test_names_are_escaped() -> None:
    assert "&lt;script&gt;" in pages.fit_error("<script>alert(1)</script>")
    assert "<script>" not in pages.cluster_queue_card(cq_view("<script>"), [])
