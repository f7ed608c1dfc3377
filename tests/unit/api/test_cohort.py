"""Cohort: parsing both API versions, and conversion between them."""

from __future__ import annotations

from fractions import Fraction

import pytest

from webhook.api import wire
from webhook.api.cohort import Cohort, parse_cohort
from webhook.api.conversion import V1BETA1, V1BETA2, convert


def test_parses_parent_quota_limits_and_weight() -> None:
    obj = {
        "metadata": {"name": "dept"},
        "spec": {
            "parentName": "org",
            "fairSharing": {"weight": "1500m"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": 4, "borrowingLimit": "2"}]}
                    ],
                }
            ],
        },
    }
    cohort = parse_cohort(obj)
    assert (cohort.name, cohort.parent, cohort.weight) == ("dept", "org", Fraction(3, 2))
    (rq,) = cohort.resource_groups[0].flavors[0].resources
    assert rq.nominal.nano == 4 * 10**9
    assert rq.borrowing_limit is not None
    assert rq.borrowing_limit.nano == 2 * 10**9


def test_root_with_nothing_set() -> None:
    assert parse_cohort({"metadata": {"name": "org"}, "spec": {}}) == Cohort("org")


def test_negative_weight_is_refused() -> None:
    with pytest.raises(wire.InvalidObject, match=r"spec\.fairSharing\.weight"):
        parse_cohort({"metadata": {"name": "x"}, "spec": {"fairSharing": {"weight": "-1"}}})


def test_converts_both_ways_dropping_what_v1beta2_cannot_hold() -> None:
    v1 = {
        "apiVersion": V1BETA1,
        "kind": "Cohort",
        "metadata": {"name": "dept"},
        "spec": {"parentName": "org"},
        "status": {"fairSharing": {"weightedShare": 7, "admissionFairSharingStatus": {"consumedResources": {}}}},
    }
    v2 = convert(v1, V1BETA2)
    assert v2 == {**v1, "apiVersion": V1BETA2, "status": {"fairSharing": {"weightedShare": 7}}}
    assert convert(v2, V1BETA1) == {**v2, "apiVersion": V1BETA1}
    assert "admissionFairSharingStatus" in v1["status"]["fairSharing"]  # type: ignore[index]
