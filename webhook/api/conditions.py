"""Kubernetes-style status conditions on JSON objects: read one, set one (pure, time passed in).

A condition keeps its ``lastTransitionTime`` while its status does not change, as the API conventions ask,
so rewriting the same reason with a fresher message does not look like a transition.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.copies import writable

JSON = dict[str, Any]

# Kueue truncates condition messages at 32 KiB; the API server refuses longer ones.
MAX_MESSAGE_BYTES = 32 * 1024


def format_time(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def find(conditions: Sequence[Mapping[str, Any]] | None, kind: str) -> Mapping[str, Any] | None:
    for condition in conditions or ():
        if condition.get("type") == kind:
            return condition
    return None


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    condition = find((obj.get("status") or {}).get("conditions"), kind)
    return condition is not None and condition.get("status") == "True"


def truncate(message: str) -> str:
    raw = message.encode()
    if len(raw) <= MAX_MESSAGE_BYTES:
        return message
    return raw[: MAX_MESSAGE_BYTES - 3].decode(errors="ignore") + "..."


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    *,
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime.datetime,
    observed_generation: int | None = None,
) -> list[JSON]:
    """A new condition list with ``kind`` set; the other conditions are copied unchanged."""
    result = [writable(c) for c in conditions or () if c.get("type") != kind]
    previous = find(conditions, kind)
    value = "True" if status else "False"
    transition = format_time(now)
    if previous is not None and previous.get("status") == value and previous.get("lastTransitionTime"):
        transition = str(previous["lastTransitionTime"])
    condition: JSON = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": truncate(message),
        "lastTransitionTime": transition,
    }
    if observed_generation is not None:
        condition["observedGeneration"] = observed_generation
    result.append(condition)
    return result


def same(conditions: Sequence[Mapping[str, Any]] | None, *, kind: str, status: bool, reason: str, message: str) -> bool:
    """Whether setting this condition would change nothing (saves a write)."""
    previous = find(conditions, kind)
    return (
        previous is not None
        and previous.get("status") == ("True" if status else "False")
        and previous.get("reason") == reason
        and previous.get("message") == truncate(message)
    )
