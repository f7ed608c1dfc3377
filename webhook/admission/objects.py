"""Reading the queue objects and Workloads an AdmissionReview carries as sent: nested maps and lists.

The job-kind rules read the typed ``KubeObject`` instead (``webhook.api.model``); these accessors serve the queue
and Workload rules, which check a schema field by field. Custom resources and hostile callers can send anything,
so every accessor checks the shape it returns and raises ``MalformedReview`` (HTTP 400) otherwise.
Must not: decide policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission.review import MalformedReview

_EMPTY: Mapping[str, Any] = {}


def mapping(obj: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    """The object at ``path`` (empty when absent or null)."""
    current: Any = obj
    for i, part in enumerate(path):
        current = current.get(part)
        if current is None:
            return _EMPTY
        if not isinstance(current, dict):
            raise MalformedReview(f"{'.'.join(path[: i + 1])} must be an object")
    return current  # type: ignore[no-any-return]


def sequence(obj: Mapping[str, Any], *path: str) -> list[Any]:
    """The list at ``path`` (empty when absent or null)."""
    parent = mapping(obj, *path[:-1])
    value = parent.get(path[-1])
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedReview(f"{'.'.join(path)} must be a list")
    return value
