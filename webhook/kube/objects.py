"""Wire shapes exchanged with the API server: objects as plain JSON dicts, lists, watch events, keys.

Owns: the type aliases and tiny pure accessors every layer above ``kube`` uses to talk about objects.
Must not: do I/O or interpret kind-specific fields (that is ``webhook.api``'s job).
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, TypeAlias

from webhook.api.views import ObjectKey as ObjectKey  # where an object lives: defined with the views, which know it

# A Kubernetes object exactly as JSON decodes it. Kind-specific TypedDict views live in webhook.api.
Object: TypeAlias = dict[str, Any]
# A JSON patch (RFC 6902) operation list, or a merge patch (RFC 7386) object.
JsonPatch: TypeAlias = list[dict[str, Any]]
MergePatch: TypeAlias = dict[str, Any]
PatchType = Literal["merge", "json"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


class ObjectList(NamedTuple):
    """The result of a list: every item, and the collection's resourceVersion to watch from."""

    items: list[Object]
    resource_version: str


class WatchEvent(NamedTuple):
    """One watch event. For ``BOOKMARK`` the object carries only ``metadata.resourceVersion``."""

    type: EventType
    object: Object


def key_of(obj: Object) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(meta.get("namespace") or "", meta.get("name") or "")


def resource_version_of(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def labels_of(obj: Object) -> dict[str, str]:
    labels: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return labels
