"""A policy's answer: allow (optionally with a JSON patch and warnings) or deny with a message.

Must not: know about HTTP or the AdmissionReview envelope; ``review.py`` turns a verdict into a response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from webhook.admission.fielderror import FieldError, summarize

# Kubernetes' own status code for a refused request: the API server relays it to the client.
DENIED_CODE = 403


class Operation(TypedDict):
    """One RFC 6902 operation of a verdict's patch, as the response carries it (``webhook.admission.patch`` emits
    only these two)."""

    op: Literal["add", "replace"]
    path: str
    value: Any


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    message: str = ""
    code: int = 200
    patch: tuple[Operation, ...] = ()
    warnings: tuple[str, ...] = ()


ALLOW = Verdict(allowed=True)


def allow(*, patch: Sequence[Operation] = (), warnings: Sequence[str] = ()) -> Verdict:
    if not patch and not warnings:
        return ALLOW
    return Verdict(allowed=True, patch=tuple(patch), warnings=tuple(warnings))


def deny(message: str, *, warnings: Sequence[str] = ()) -> Verdict:
    return Verdict(allowed=False, message=message, code=DENIED_CODE, warnings=tuple(warnings))


def judge(errors: Sequence[FieldError], *, warnings: Sequence[str] = ()) -> Verdict:
    """Allow when no rule found anything, else deny with every error in one message."""
    if errors:
        return deny(summarize(errors), warnings=warnings)
    return allow(warnings=warnings)
