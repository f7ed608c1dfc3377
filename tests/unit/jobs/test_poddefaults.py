"""LimitRange defaults and RuntimeClass overhead, applied to a pod template as the API server will to its pods."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.quantity import parse_quantity
from webhook.api.resources import pod_requests
from webhook.api.views import ObjectView, PodTemplateView
from webhook.jobs.poddefaults import PodDefaults, runtime_overheads


def template(resources: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if resources is not None:
        container["resources"] = resources
    return {"spec": {"containers": [container], **spec}}


def limit_range(**item: Any) -> dict[str, Any]:
    return {"metadata": {"name": "lr"}, "spec": {"limits": [{"type": "Container", **item}]}}


def cpu(tmpl: dict[str, Any]) -> str:
    return str(pod_requests(tmpl["spec"]).get("cpu", parse_quantity("0")))


@pytest.mark.parametrize(
    ("resources", "item", "expected"),
    [
        pytest.param(None, {"defaultRequest": {"cpu": "1"}, "default": {"cpu": "2"}}, "1", id="no-resources"),
        pytest.param({"requests": {"cpu": "3"}}, {"defaultRequest": {"cpu": "1"}}, "3", id="own-request-wins"),
        pytest.param({"limits": {"cpu": "500m"}}, {"defaultRequest": {"cpu": "1"}}, "500m", id="request-from-limit"),
        pytest.param(None, {"type": "Pod", "max": {"cpu": "9"}}, "0", id="pod-items-default-nothing"),
    ],
)
def test_limit_range_defaults(resources: dict[str, Any] | None, item: dict[str, Any], expected: str) -> None:
    kind = item.pop("type", "Container")
    lr = limit_range(**item)
    lr["spec"]["limits"][0]["type"] = kind
    assert cpu(PodDefaults(limit_ranges=[ObjectView.of(lr)]).apply(PodTemplateView.of(template(resources)))) == expected


def test_runtime_class_overhead_is_added() -> None:
    overheads = runtime_overheads(
        [ObjectView.of({"metadata": {"name": "kata"}, "overhead": {"podFixed": {"cpu": "250m"}}})]
    )
    adjusted = PodDefaults(overheads=overheads).apply(
        PodTemplateView.of(template({"requests": {"cpu": "1"}}, runtimeClassName="kata"))
    )
    assert adjusted["spec"]["overhead"] == {"cpu": "250m"}
    assert cpu(adjusted) == "1250m"


def test_the_template_given_is_not_changed() -> None:
    original = template()
    PodDefaults(limit_ranges=[ObjectView.of(limit_range(defaultRequest={"cpu": "1"}))]).apply(
        PodTemplateView.of(original)
    )
    assert original == template()
