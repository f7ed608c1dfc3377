"""``writable``: the one way to make a copy of an object read from the cache that may then be changed.

Owns: deep copies in which no two places share a dict or a list. The cache stores objects with their equal values
shared (``webhook.controller.interner``), between objects and within one: a Job whose own labels were defaulted from
its pod template's holds one dict in both places. ``copy.deepcopy`` keeps such sharing (its memo copies a shared
dict once and puts the copy in both places), so setting a label on the copy's metadata would set it in its
template too, which the API server refuses as a change to an immutable field. A tree copy has no such paths.
Must not: change the values it copies (a tuple may come back as a list, as JSON writes it), or do I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeVar

import orjson

# Anything but JSON's own types makes orjson raise instead of converting it: such values are copied one by one.
_JSON_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS

_Value = TypeVar("_Value")


def writable(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``value`` as a dict of its own, with no dict or list reachable by two paths."""
    try:
        result: dict[str, Any] = orjson.loads(orjson.dumps(value, option=_JSON_ONLY))
    except TypeError:  # not JSON (a datetime, a tuple key, an integer past 64 bits): the slow way
        result = {key: _tree(item) for key, item in value.items()}
    return result


def writable_value(value: _Value) -> _Value:
    """``writable`` for any value: a dict or list as a tree of its own, anything else as ``copy.deepcopy`` makes it."""
    if isinstance(value, Mapping):
        return writable(value)  # type: ignore[return-value]  # a Mapping comes back as the dict it copies to
    return _tree(value)  # type: ignore[no-any-return]  # _tree keeps the type of what it copies


def _tree(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _tree(item) for key, item in value.items()}
    if type(value) is list:
        return [_tree(item) for item in value]
    return copy.deepcopy(value)
