"""Reading Kubernetes objects as received in an AdmissionReview: metadata, labels, owners, nested fields.

The API server decodes built-in kinds before calling webhooks, but custom resources and hostile callers can send
anything, so every accessor checks the shape it returns and raises ``MalformedReview`` (HTTP 400) otherwise.
Must not: decide policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from webhook.admission.review import MalformedReview


class OwnerReferenceWire(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool


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


def string_map(obj: Mapping[str, Any], *path: str) -> Mapping[str, str]:
    value = mapping(obj, *path)
    if not all(isinstance(v, str) for v in value.values()):
        raise MalformedReview(f"{'.'.join(path)} must map strings to strings")
    return value


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return string_map(obj, "metadata", "labels")


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return string_map(obj, "metadata", "annotations")


def name(obj: Mapping[str, Any]) -> str:
    value = mapping(obj, "metadata").get("name", "")
    if not isinstance(value, str):
        raise MalformedReview("metadata.name must be a string")
    return value


def is_being_deleted(obj: Mapping[str, Any]) -> bool:
    return mapping(obj, "metadata").get("deletionTimestamp") is not None


def controller_owner(obj: Mapping[str, Any]) -> OwnerReferenceWire | None:
    """The owner reference marked ``controller: true``, if any."""
    for ref in sequence(obj, "metadata", "ownerReferences"):
        if not isinstance(ref, dict):
            raise MalformedReview("metadata.ownerReferences entries must be objects")
        if ref.get("controller") is True:
            return ref  # type: ignore[return-value]
    return None


def api_group(api_version: object) -> str:
    """``batch/v1`` → ``batch``; ``v1`` → ``""``."""
    if not isinstance(api_version, str):
        return ""
    group, _, _ = api_version.rpartition("/")
    return group


def integer(obj: Mapping[str, Any], *path: str, default: int) -> int:
    parent = mapping(obj, *path[:-1])
    value = parent.get(path[-1])
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedReview(f"{'.'.join(path)} must be an integer")
    return value


def flag(obj: Mapping[str, Any], *path: str) -> bool:
    """A boolean field, false when absent or null."""
    parent = mapping(obj, *path[:-1])
    value = parent.get(path[-1])
    if value is None:
        return False
    if not isinstance(value, bool):
        raise MalformedReview(f"{'.'.join(path)} must be a boolean")
    return value
