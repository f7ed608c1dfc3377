"""Kubernetes Events about our objects, so ``kubectl describe`` tells users what happened and why.

Recording an event never fails the caller: an event is information, and losing one must not stop an admission.
``record_later`` does not make the caller wait either: the event is written by a background task, at most
``rate`` per second on average (bursts up to ``burst``); beyond that it is dropped and counted, as client-go's
event correlator drops events under a storm. With thousands of admissions a second's worth of events is as many
API writes as the admissions themselves, and on a busy API server they delayed the admissions that mattered.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable
from typing import Literal

from webhook.api.conditions import format_time
from webhook.api.views import ObjectView
from webhook.controller.ratelimit import TokenBucket
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import EVENT
from webhook.logs import object_fields

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
COMPONENT = "turnstile"
# The API server accepts longer notes, but Kueue cuts event messages at 1 KiB; so do we.
MAX_MESSAGE_BYTES = 1024


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        *,
        component: str = COMPONENT,
        host: str = "",
        # A burst of 200 records 100 admissions whole; then 10 a second. At 20 a second the baseline benchmark's
        # storm (15,000 admissions) wrote 4,600 events, and its wall time was 5% shorter with none.
        rate: float = 10.0,
        burst: int = 200,
        in_flight: int = 16,
    ) -> None:
        self._kube = kube
        self._component = component
        self._host = host
        self._bucket = TokenBucket(rate, burst)
        self._in_flight = asyncio.Semaphore(in_flight)
        self._tasks: set[asyncio.Task[None]] = set()
        self.dropped = 0  # events not written because the rate was exceeded

    def limit_by(self, share: Callable[[], float]) -> None:
        """From now on ``record_later``'s rate is ``rate * share()`` (``WriteLatency.share``)."""
        self._bucket.follow(share)

    def record_later(
        self,
        obj: ObjectView,
        *,
        type: EventType,
        reason: str,
        message: str,
        now: datetime.datetime | None = None,
    ) -> None:
        """``record`` in the background, within the rate; dropped (and counted) beyond it."""
        if not self._bucket.take(time.monotonic()):
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.info("event rate exceeded: %d events dropped so far", self.dropped)
            return

        async def write() -> None:
            async with self._in_flight:
                await self.record(obj, type=type, reason=reason, message=message, now=now)

        task = asyncio.get_running_loop().create_task(write(), name=f"event:{reason}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self) -> None:
        """Give up the events ``record_later`` started and not yet written (the writer stops)."""
        for task in list(self._tasks):
            task.cancel()

    async def drain(self) -> None:
        """Wait for every event ``record_later`` has started."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def record(
        self,
        obj: ObjectView,
        *,
        type: EventType,
        reason: str,
        message: str,
        now: datetime.datetime | None = None,
    ) -> None:
        meta = obj.metadata
        namespace = meta.get("namespace") or "default"
        moment = format_time(now or datetime.datetime.now(datetime.UTC))
        note = message.encode()[:MAX_MESSAGE_BYTES].decode(errors="ignore")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.raw.get("apiVersion"),
                "kind": obj.raw.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": type,
            "reason": reason,
            "message": note,
            "source": {"component": self._component, "host": self._host},
            "reportingComponent": self._component,
            "reportingInstance": self._host or self._component,
            "firstTimestamp": moment,
            "lastTimestamp": moment,
            "count": 1,
        }
        try:
            await self._kube.create(EVENT, body, namespace=namespace)
        except errors.KubeError as exc:
            # object_fields, not a plain {"name": ...}: "name" is a LogRecord attribute, and overwriting it raises.
            log.warning("could not record event %s: %s", reason, exc, extra=object_fields(obj.raw))
