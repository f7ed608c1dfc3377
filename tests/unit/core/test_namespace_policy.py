"""Namespace policy, label selectors and Workload names."""

from __future__ import annotations

import pytest

from webhook.admission import selector
from webhook.api import constants as c
from webhook.core.namespace_policy import NamespacePolicy
from webhook.jobs import naming


@pytest.mark.parametrize(
    ("namespace", "labels", "managed"),
    [
        pytest.param("team-a", None, True, id="unknown-namespace-decided-by-name"),
        pytest.param("kube-system", None, False, id="kube-system"),
        pytest.param("turnstile-system", {}, False, id="own-namespace"),
        pytest.param("", None, False, id="cluster-scoped"),
    ],
)
def test_default_policy(namespace: str, labels: dict[str, str] | None, managed: bool) -> None:
    assert NamespacePolicy.default().is_managed(namespace, labels) is managed


def test_protected_namespaces_win_over_a_selector_that_matches_everything() -> None:
    policy = NamespacePolicy(selector.Selector(), own_namespace="queues")
    assert not policy.is_managed("queues", {})
    assert not policy.is_managed("kube-system", {})
    assert policy.is_managed("team-a", {})


def test_opt_in_label_requires_true() -> None:
    policy = NamespacePolicy(selector.Selector(), opt_in_label=c.OPENSHIFT_MANAGED_NAMESPACE_LABEL)
    assert policy.is_managed("a", {c.OPENSHIFT_MANAGED_NAMESPACE_LABEL: "true"})
    assert not policy.is_managed("a", {c.OPENSHIFT_MANAGED_NAMESPACE_LABEL: "false"})
    assert not policy.is_managed("a", None)


@pytest.mark.parametrize(
    ("raw", "labels", "matches"),
    [
        pytest.param({"matchLabels": {"team": "ml"}}, {"team": "ml"}, True, id="match-labels"),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "In", "values": ["a", "b"]}]}, {"t": "c"}, False, id="in"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["a"]}]}, {}, True, id="not-in-absent"
        ),
        pytest.param({"matchExpressions": [{"key": "t", "operator": "Exists"}]}, {"t": ""}, True, id="exists"),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "DoesNotExist"}]}, {"t": "x"}, False, id="does-not-exist"
        ),
        pytest.param({}, {"anything": "x"}, True, id="empty-matches-all"),
    ],
)
def test_selector_matching(raw: dict[str, object], labels: dict[str, str], matches: bool) -> None:
    assert selector.problems(raw, "s") == []
    assert selector.compile_selector(raw).matches(labels) is matches


def test_selector_problems_name_the_field() -> None:
    problems = selector.problems({"matchExpressions": [{"key": "t", "operator": "Near"}]}, "spec.ns")
    assert [p.path for p in problems] == ["spec.ns.matchExpressions[0].operator"]


def test_workload_names_are_stable_distinct_and_valid() -> None:
    a = naming.job_workload_name("ns", "train")
    assert a == naming.job_workload_name("ns", "train")
    assert a.startswith("job-train-")
    assert len(a) == len("job-train-") + 5
    assert a != naming.job_workload_name("other", "train")
    long = naming.job_workload_name("ns", "x" * 253)
    assert len(long) <= 253
