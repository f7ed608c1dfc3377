"""Kubernetes Events about our objects, so ``kubectl describe`` tells users what happened and why.

Recording an event never fails the caller: an event is information, and losing one must not stop an admission.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from typing import Any, Literal

from webhook.api.conditions import format_time
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
    def __init__(self, kube: Kube, *, component: str = COMPONENT, host: str = "") -> None:
        self._kube = kube
        self._component = component
        self._host = host

    async def record(
        self,
        obj: Mapping[str, Any],
        *,
        type: EventType,
        reason: str,
        message: str,
        now: datetime.datetime | None = None,
    ) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        moment = format_time(now or datetime.datetime.now(datetime.UTC))
        note = message.encode()[:MAX_MESSAGE_BYTES].decode(errors="ignore")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
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
            log.warning("could not record event %s: %s", reason, exc, extra=object_fields(obj))
