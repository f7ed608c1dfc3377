"""The ``fairSharing`` section of the configuration file, as Kueue reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from webhook.config import ConfigError, load_config, parse_config
from webhook.core.fairsharing import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, FairSharing

V1 = "config.kueue.x-k8s.io/v1beta1"
V2 = "config.kueue.x-k8s.io/v1beta2"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"apiVersion": V2}, FairSharing(), id="absent-is-off"),
        pytest.param({"apiVersion": V2, "fairSharing": {}}, FairSharing(enabled=True), id="v1beta2-present-is-on"),
        pytest.param({"apiVersion": V1, "fairSharing": {}}, FairSharing(), id="v1beta1-needs-enable"),
        pytest.param(
            {"apiVersion": V1, "fairSharing": {"enable": True, "preemptionStrategies": [LESS_THAN_INITIAL_SHARE]}},
            FairSharing(enabled=True, preemption_strategies=(LESS_THAN_INITIAL_SHARE,)),
            id="v1beta1-enabled-one-strategy",
        ),
        pytest.param(
            {"fairSharing": {"preemptionStrategies": [LESS_THAN_OR_EQUAL_TO_FINAL_SHARE]}},
            FairSharing(enabled=True, preemption_strategies=(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,)),
            id="final-share-only",
        ),
    ],
)
def test_fair_sharing_section(data: dict[str, Any], expected: FairSharing) -> None:
    assert parse_config(data).fair_sharing == expected


def test_strategy_lists_kueue_refuses_are_refused() -> None:
    order = [LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE]
    with pytest.raises(ConfigError, match=r"fairSharing\.preemptionStrategies: must be one of"):
        parse_config({"fairSharing": {"preemptionStrategies": order}})
    with pytest.raises(ConfigError, match=r"fairSharing\.typo: unknown field"):
        parse_config({"fairSharing": {"typo": 1}})


def test_kueue_style_fair_sharing_configuration_loads() -> None:
    path = Path(__file__).parents[1] / "fixtures" / "kueue-examples" / "fair-sharing-config.yaml"
    assert load_config(path).fair_sharing == FairSharing(
        enabled=True, preemption_strategies=(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
    )


def test_admission_fair_sharing_section() -> None:
    afs = parse_config(
        {
            "admissionFairSharing": {
                "usageHalfLifeTime": "10m",
                "usageSamplingInterval": "1m",
                "resourceWeights": {"cpu": 2},
            }
        }
    ).admission_fair_sharing
    assert (afs.enabled, afs.usage_half_life_seconds, afs.usage_sampling_interval_seconds) == (True, 600.0, 60.0)
    assert afs.resource_weights == {"cpu": 2.0}
    assert parse_config({}).admission_fair_sharing.enabled is False
    with pytest.raises(ConfigError, match=r"admissionFairSharing\.resourceWeights"):
        parse_config({"admissionFairSharing": {"resourceWeights": {"cpu": -1}}})
