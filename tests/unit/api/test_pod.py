"""The Pod view: gates, phase, readiness and deletion as the pod integration reads them."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.pod import Pod


def make_pod(*, gates: list[str] | None = None, phase: str | None = None, **status: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
    if gates is not None:
        pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    pod["status"] = dict(status) | ({"phase": phase} if phase else {})
    return pod


def test_gated_by_name() -> None:
    pod = Pod.of(make_pod(gates=["other", "kueue.x-k8s.io/admission"]))
    assert pod.gated("kueue.x-k8s.io/admission")
    assert not pod.gated("missing")
    assert not Pod.of(make_pod()).gated("kueue.x-k8s.io/admission")


@pytest.mark.parametrize(
    ("phase", "terminal"),
    [
        pytest.param(None, False, id="no-phase"),
        pytest.param("Running", False, id="running"),
        pytest.param("Succeeded", True, id="succeeded"),
        pytest.param("Failed", True, id="failed"),
    ],
)
def test_terminal(phase: str | None, terminal: bool) -> None:
    pod = Pod.of(make_pod(phase=phase))
    assert (pod.phase, pod.terminal) == (phase, terminal)


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        pytest.param([], False, id="none"),
        pytest.param([{"type": "Ready", "status": "False"}], False, id="not-ready"),
        pytest.param([{"type": "PodScheduled", "status": "True"}], False, id="another-type"),
        pytest.param(
            [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}], True, id="ready"
        ),
    ],
)
def test_ready(conditions: list[dict[str, str]], ready: bool) -> None:
    assert Pod.of(make_pod(conditions=conditions)).ready is ready


def test_deletion() -> None:
    pod = make_pod()
    assert (Pod.of(pod).deletion_timestamp, Pod.of(pod).deletion_grace_seconds) == (None, 0)
    pod["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}
    assert (Pod.of(pod).deletion_timestamp, Pod.of(pod).deletion_grace_seconds) == ("2026-01-01T00:00:00Z", 30)
