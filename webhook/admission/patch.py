"""Building RFC 6902 JSON patches against the object the API server sent, one intent at a time.

A ``Patch`` knows the original object, so it emits ``add`` for what is missing (creating parent maps and lists
in the same operation) and nothing for values already in place: applying the same intents to an already
mutated object yields an empty patch, which makes reinvocation idempotent. It reads the object as sent (the
encoding side of a review: the typed view does not say which maps exist), and refuses a parent that is not an
object. Must not: decide what to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission.review import MalformedReview
from webhook.admission.verdict import Operation


def escape(token: str) -> str:
    """A JSON Pointer reference token (RFC 6901): ``~`` → ``~0``, ``/`` → ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


_KIND_WORDS: dict[type[object], str] = {object: "a value", dict: "an object", list: "a list"}


def pointer(path: tuple[str, ...]) -> str:
    return "".join("/" + escape(p) for p in path)


def _value(obj: Mapping[str, Any], path: tuple[str, ...], kind: type[object] = object) -> Any:
    """The value at ``path`` in ``obj``, None when it or a parent is absent or null; a parent that is not an
    object, or a value that is not a ``kind``, is malformed."""
    current: Any = obj
    for depth, part in enumerate(path):
        if not isinstance(current, dict):
            raise MalformedReview(f"{'.'.join(path[:depth])} must be an object")
        current = current.get(part)
        if current is None:
            return None
    if not isinstance(current, kind):
        raise MalformedReview(f"{'.'.join(path)} must be {_KIND_WORDS[kind]}")
    return current


class Patch:
    def __init__(self, obj: Mapping[str, Any]) -> None:
        self._obj = obj
        self._ops: list[Operation] = []
        # Maps and lists this patch itself adds: later intents write into them instead of adding ops.
        self._created: dict[tuple[str, ...], Any] = {}

    @property
    def ops(self) -> list[Operation]:
        return self._ops

    def _existing(self, path: tuple[str, ...]) -> Any:
        if path in self._created:
            return self._created[path]
        return _value(self._obj, path)

    def _ensure_map(self, path: tuple[str, ...]) -> dict[str, Any] | None:
        """Returns the map this patch creates at ``path`` (to write into), or None when the object has it."""
        if path in self._created:
            created: dict[str, Any] = self._created[path]
            return created
        if _value(self._obj, path) is not None:
            return None
        # Find the first missing key; everything below it is added as one nested value.
        depth = 1
        while self._existing(path[:depth]) is not None:
            depth += 1
        top: dict[str, Any] = {}
        self._created[path[:depth]] = top
        self._ops.append({"op": "add", "path": pointer(path[:depth]), "value": top})
        inner = top
        for end in range(depth + 1, len(path) + 1):
            nested: dict[str, Any] = {}
            inner[path[end - 1]] = nested
            self._created[path[:end]] = nested
            inner = nested
        return inner

    def set_entry(self, map_path: tuple[str, ...], key: str, value: str) -> None:
        """``map_path[key] = value`` (labels, annotations)."""
        current = _value(self._obj, (*map_path, key)) if map_path not in self._created else None
        created = self._ensure_map(map_path)
        if created is not None:
            created[key] = value
            return
        if current == value:
            return
        self._ops.append(
            {"op": "replace" if current is not None else "add", "path": pointer((*map_path, key)), "value": value}
        )

    def set_entries(self, map_path: tuple[str, ...], entries: Mapping[str, str]) -> None:
        """``set_entry`` for each of ``entries``, in order."""
        for key, value in entries.items():
            self.set_entry(map_path, key, value)

    def set_field(self, path: tuple[str, ...], value: Any) -> None:
        """``path = value`` for a scalar field whose parent object exists (e.g. ``spec.suspend``)."""
        parent = _value(self._obj, path[:-1], dict)
        present = parent is not None and path[-1] in parent
        if present and parent[path[-1]] == value:
            return
        self._ops.append({"op": "replace" if present else "add", "path": pointer(path), "value": value})

    def append_unique(self, list_path: tuple[str, ...], item: Any) -> None:
        """Appends ``item`` to the list at ``list_path`` unless an equal item is there (gates, finalizers)."""
        if list_path in self._created:
            if item not in self._created[list_path]:
                self._created[list_path].append(item)
            return
        current = _value(self._obj, list_path, list)
        if current is not None and item in current:
            return
        if current is None:
            created = [item]
            self._created[list_path] = created
            self._ops.append({"op": "add", "path": pointer(list_path), "value": created})
            return
        self._ops.append({"op": "add", "path": pointer(list_path) + "/-", "value": item})
