"""The EventRecorder never fails its caller."""

from __future__ import annotations

import logging

import pytest

from tests.doubles.fakekube import FakeKube
from tests.unit.jobs.builders import make_job
from webhook.api.views import ObjectView
from webhook.controller.events import EventRecorder
from webhook.kube import resources as r
from webhook.kube.errors import Forbidden


async def test_a_refused_event_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    kube = FakeKube()
    kube.faults.fail_next("create", resource=r.EVENT, error=Forbidden("namespace is being terminated", status=403))
    with caplog.at_level(logging.WARNING, logger="webhook.controller.events"):
        await EventRecorder(kube).record(
            ObjectView.of(make_job("train")), type="Warning", reason="Pending", message="waiting"
        )
    assert "could not record event Pending" in caplog.text
    assert kube.objects(r.EVENT) == []


async def test_events_recorded_later_are_written_within_the_rate_and_the_rest_dropped() -> None:
    kube = FakeKube()
    recorder = EventRecorder(kube, rate=0.001, burst=3)
    for i in range(5):
        recorder.record_later(
            ObjectView.of(make_job(f"train-{i}")), type="Normal", reason="Admitted", message="admitted"
        )
    await recorder.drain()
    assert len(kube.objects(r.EVENT)) == 3
    assert recorder.dropped == 2
