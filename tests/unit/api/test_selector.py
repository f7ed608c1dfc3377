"""Label selectors: matchLabels and every matchExpressions operator."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.selector import matches, parse_label_selector
from webhook.api.wire import InvalidObject

LABELS = {"team": "ml", "tier": "gold"}


@pytest.mark.parametrize(
    ("selector", "matched"),
    [
        pytest.param({}, True, id="empty-matches-all"),
        pytest.param({"matchLabels": {"team": "ml"}}, True, id="match-labels"),
        pytest.param({"matchLabels": {"team": "web"}}, False, id="match-labels-differs"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]}, True, id="in"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}, False, id="not-in"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True, id="not-in-missing-key"
        ),
        pytest.param({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, True, id="exists"),
        pytest.param({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, False, id="does-not-exist"),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, False, id="in-missing-key"
        ),
        pytest.param(
            {
                "matchLabels": {"team": "ml"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["bronze"]}],
            },
            False,
            id="all-must-hold",
        ),
    ],
)
def test_matches(selector: dict[str, Any], matched: bool) -> None:
    assert matches(parse_label_selector(selector), LABELS) is matched


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}, id="unknown-operator"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, id="in-without-values"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, id="exists-with-values"
        ),
        pytest.param({"matchLabels": ["a"]}, id="labels-not-a-map"),
    ],
)
def test_rejects_malformed(selector: dict[str, Any]) -> None:
    with pytest.raises(InvalidObject):
        parse_label_selector(selector)
