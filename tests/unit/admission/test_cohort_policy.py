"""Cohort objects: resource groups as for ClusterQueues, limits only below a parent, and no cycles."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.admission.builders import make_request
from tests.unit.admission.test_queue_policy import CPU_MEM, OPTIONS, group, quota
from webhook.admission import queue_policy
from webhook.admission.verdict import Verdict
from webhook.admission.view import StaticView


def make_cohort(name: str = "dept", *groups: dict[str, Any], parent: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"resourceGroups": list(groups), **spec}
    if parent is not None:
        body["parentName"] = parent
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name}, "spec": body}


def run(obj: dict[str, Any], *, known: dict[str, str | None] | None = None) -> Verdict:
    view = StaticView(cohorts=known or {})
    verdict: Verdict = queue_policy.validate_cohort(make_request(obj, namespace=""), view, OPTIONS)
    return verdict


@pytest.mark.parametrize(
    ("cohort", "fragment"),
    [
        pytest.param(
            make_cohort("org", group(["cpu"], ("default", [quota("cpu", 4, borrowingLimit=1)]))),
            "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: 1: must be unset when "
            "parentName is empty",
            id="borrowing-limit-on-a-root",
        ),
        pytest.param(
            make_cohort("org", group(["cpu"], ("default", [quota("cpu", 4, lendingLimit=1)]))),
            "lendingLimit: Invalid value: 1: must be unset when parentName is empty",
            id="lending-limit-on-a-root",
        ),
        pytest.param(
            make_cohort("dept", group(CPU_MEM, ("default", [quota("cpu", 4)])), parent="org"),
            "spec.resourceGroups[0].flavors[0].resources: Invalid value: 1",
            id="resource-missing",
        ),
        pytest.param(
            make_cohort("dept", parent="dept"), "would make a cycle of Cohorts (dept -> dept)", id="own-parent"
        ),
        pytest.param(make_cohort("dept", parent="Bad_Name"), "spec.parentName: Invalid value", id="bad-parent-name"),
        pytest.param(
            make_cohort("dept", fairSharing={"weight": "-1"}, parent="org"), "spec.fairSharing.weight", id="weight"
        ),
    ],
)
def test_bad_cohorts_are_refused_naming_the_field(cohort: dict[str, Any], fragment: str) -> None:
    verdict = run(cohort)
    assert not verdict.allowed
    assert fragment in verdict.message


def test_cohort_may_lend_more_than_it_owns_itself() -> None:
    # Unlike a ClusterQueue, a Cohort's lending limit bounds its whole subtree, not its own nominal quota.
    cohort = make_cohort("dept", group(["cpu"], ("default", [quota("cpu", 1, lendingLimit=10)])), parent="org")
    assert run(cohort).allowed


def test_cycle_through_known_cohorts_is_refused_with_the_path() -> None:
    verdict = run(make_cohort("org", parent="team"), known={"team": "dept", "dept": "org", "org": None})
    assert not verdict.allowed
    assert "would make a cycle of Cohorts (org -> team -> dept -> org)" in verdict.message


def test_tree_ending_in_a_root_or_a_missing_parent_is_allowed() -> None:
    assert run(make_cohort("team", parent="dept"), known={"dept": "org", "org": None}).allowed
    assert run(make_cohort("team", parent="nowhere"), known={"dept": "org"}).allowed
