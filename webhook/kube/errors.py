"""Turnstile's one error hierarchy for talking to the API server.

Owns: the exception types every caller branches on, and the mapping from an HTTP status (plus the
Kubernetes ``Status`` object the server sends with it) to one of those types.
Must not: know about any client library; ``webhook.kube.apiserver`` translates its exceptions here.

Callers retry ``Retryable`` (with backoff), re-read and retry ``Conflict``, re-list on ``Gone``, and treat
the rest as permanent for the request that caused them.
"""

from __future__ import annotations

from typing import Any


class KubeError(Exception):
    """Any failure of a request to the API server.

    ``status`` is the HTTP status code (None when no response arrived), ``reason`` the machine-readable
    ``Status.reason`` (``Conflict``, ``AlreadyExists``, ``Expired``, ...), ``body`` the ``Status`` object.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.body = body


class Retryable(KubeError):
    """Transient: timeouts, 429, 5xx, dropped connections. The same request may succeed later.

    A write that failed this way may or may not have been applied: re-read before acting on the outcome.
    """


class Conflict(KubeError):
    """409: the object changed since it was read (stale ``resourceVersion``) or a precondition failed."""


class AlreadyExists(KubeError):
    """409 with reason ``AlreadyExists``: create of a name that is taken."""


class NotFound(KubeError):
    """404: the object, its namespace or its kind (a CRD not installed) does not exist."""


class Gone(KubeError):
    """410: the requested ``resourceVersion`` is too old (compacted); list again and watch from there."""


class Forbidden(KubeError):
    """401/403: not authenticated or not allowed. Permanent until credentials or RBAC change."""


class Invalid(KubeError):
    """400/422: the request or object is malformed or rejected by validation or admission. Permanent."""


def error_from_status(status: int, body: dict[str, Any] | None = None) -> KubeError:
    """The error for an HTTP status code and the ``Status`` object the server sent with it."""
    reason = body.get("reason") if body else None
    message = body.get("message") if body else None
    text = f"{status} {reason or ''}: {message or ''}".strip()
    kwargs: dict[str, Any] = {"status": status, "reason": reason, "body": body}
    if status == 409:
        return AlreadyExists(text, **kwargs) if reason == "AlreadyExists" else Conflict(text, **kwargs)
    if status == 404:
        return NotFound(text, **kwargs)
    if status == 410:
        return Gone(text, **kwargs)
    if status in (401, 403):
        return Forbidden(text, **kwargs)
    if status in (400, 422):
        return Invalid(text, **kwargs)
    if status in (408, 429) or status >= 500:
        return Retryable(text, **kwargs)
    return KubeError(text, **kwargs)
