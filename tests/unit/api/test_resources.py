"""Per-pod requests, computed as the kube-scheduler does."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.quantity import InvalidQuantity, parse_quantity
from webhook.api.resources import pod_requests


def container(
    *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, **kw: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **kw}


def expect(**amounts: str) -> dict[str, Any]:
    return {k.replace("_", "."): parse_quantity(v) for k, v in amounts.items()}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {"containers": [container(requests={"cpu": "1"}), container(requests={"cpu": "500m"})]},
            expect(cpu="1500m"),
            id="containers-add-up",
        ),
        pytest.param(
            {"containers": [container(limits={"cpu": "2", "memory": "1Gi"}, requests={"cpu": "1"})]},
            expect(cpu="1", memory="1Gi"),
            id="request-defaults-from-limit",
        ),
        pytest.param(
            {"containers": [container(requests={"cpu": "1"})], "initContainers": [container(requests={"cpu": "3"})]},
            expect(cpu="3"),
            id="init-container-max",
        ),
        pytest.param(
            {"containers": [container(requests={"cpu": "4"})], "initContainers": [container(requests={"cpu": "3"})]},
            expect(cpu="4"),
            id="containers-exceed-init",
        ),
        pytest.param(
            {
                "containers": [container(requests={"cpu": "1"})],
                "initContainers": [
                    container(requests={"cpu": "500m"}, restartPolicy="Always"),
                    container(requests={"cpu": "2"}),
                ],
            },
            expect(cpu="2500m"),
            id="sidecar-runs-beside-later-init",
        ),
        pytest.param(
            {
                "containers": [container(requests={"cpu": "1"})],
                "initContainers": [container(requests={"cpu": "500m"}, restartPolicy="Always")],
            },
            expect(cpu="1500m"),
            id="sidecar-adds-to-containers",
        ),
        pytest.param(
            {"containers": [container(requests={"cpu": "1"})], "overhead": {"cpu": "250m"}},
            expect(cpu="1250m"),
            id="overhead-added",
        ),
        pytest.param(
            {
                "containers": [container(requests={"cpu": "1", "memory": "1Gi"})],
                "resources": {"requests": {"cpu": "3"}},
            },
            expect(cpu="3", memory="1Gi"),
            id="pod-level-resources-win",
        ),
        pytest.param(
            {"containers": [container(requests={"nvidia.com/gpu": "1"})]},
            expect(nvidia_com_gpu="1"),
            id="extended-resource",
        ),
        pytest.param({"containers": []}, {}, id="nothing"),
    ],
)
def test_pod_requests(spec: dict[str, Any], want: dict[str, Any]) -> None:
    got = pod_requests(spec)
    want = {k.replace("nvidia.com.gpu", "nvidia.com/gpu"): v for k, v in want.items()}
    assert got == want


def test_invalid_quantity_names_the_field_and_value() -> None:
    with pytest.raises(InvalidQuantity, match=r"containers\[0\]\.resources\.requests\.cpu.*'lots'"):
        pod_requests({"containers": [container(requests={"cpu": "lots"})]})
