"""The EventRecorder never fails its caller, and keeps to its rate (and the share of it left by slow admissions)."""

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


async def test_events_recorded_later_follow_the_share_of_their_rate() -> None:
    kube = FakeKube()
    recorder = EventRecorder(kube, rate=1e6, burst=1)  # a token every microsecond...
    recorder.limit_by(lambda: 1e-9)  # ...of which a billionth is left: one every 1,000 s
    for i in range(3):
        recorder.record_later(
            ObjectView.of(make_job(f"train-{i}")), type="Normal", reason="Admitted", message="admitted"
        )
    await recorder.drain()
    assert len(kube.objects(r.EVENT)) == 1, "the burst only"
    assert recorder.dropped == 2
