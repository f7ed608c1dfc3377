"""``Interner``: equal values of the cached objects held once, however many objects carry them.

Owns: the copy of an object the cache stores (without ``metadata.managedFields``) in which every string and every
dict or list equal to one an earlier object carried is that earlier one, shared. Workloads repeat most of what they
hold: queue, flavor and resource names, timestamps, finalizers, priority class references, conditions, pod
templates. Stored apart, 50,000 of them took ~10 KB each (``bench.cache``); shared, the repeats cost nothing.
Must not: change a value (a shared copy is equal, as JSON, to what it replaces, and keeps its key order), touch
the object it is given, or grow without bound (each table is emptied when full, so a value that no longer repeats
is let go; what is shared already stays shared).

Sharing is safe because the cache's objects are never mutated (its contract: copy first); a dict or list that is
shared is found by a digest of its JSON, so ``True``, ``1`` and ``1.0`` stay apart. Values JSON does not have (a
datetime, a dict subclass: only in tests) are copied, never shared; a tuple, which JSON writes as a list, may
come back as an equal list (nothing the API server sends holds one).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from webhook.kube.objects import Object

# Anything but JSON's own types makes orjson raise instead of converting it, so it is never shared.
_JSON_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


class Interner:
    """Keeps up to ``limit`` strings and ``limit`` dicts or lists to share; emptied, each table, when full."""

    def __init__(self, limit: int = 16_384) -> None:
        self._limit = limit
        self._strings: dict[str, str] = {}
        self._containers: dict[bytes, Any] = {}

    def __len__(self) -> int:
        return len(self._strings) + len(self._containers)

    def stored(self, obj: Object) -> Object:
        """The copy of ``obj`` to store: without ``metadata.managedFields``, its values shared where equal.

        The object and its metadata are new dicts (each is one object's own: a name, a uid); their values are
        the shared ones."""
        return {key: self._metadata(value) if key == "metadata" else self._value(value) for key, value in obj.items()}

    def _metadata(self, meta: Any) -> Any:
        if type(meta) is not dict:
            return meta
        return {key: self._value(value) for key, value in meta.items() if key != "managedFields"}

    def _value(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return self._string(value)
        if kind is dict or kind is list:
            return self._container(value)
        return value

    def _string(self, value: str) -> str:
        shared = self._strings.get(value)
        if shared is None:
            if len(self._strings) >= self._limit:
                self._strings.clear()
            shared = self._strings[value] = value
        return shared

    def _container(self, value: dict[str, Any] | list[Any]) -> Any:
        try:
            key = hashlib.blake2b(orjson.dumps(value, option=_JSON_ONLY), digest_size=16).digest()
        except TypeError:
            return self._copy(value)
        shared = self._containers.get(key)
        if shared is None:
            if len(self._containers) >= self._limit:
                self._containers.clear()
            shared = self._containers[key] = self._copy(value)
        return shared

    def _copy(self, value: dict[str, Any] | list[Any]) -> Any:
        if type(value) is dict:
            return {key: self._value(item) for key, item in value.items()}
        return [self._value(item) for item in value]
