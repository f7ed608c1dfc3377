"""Reading raw API dicts (decoded JSON/YAML) into typed values, with errors that name the field.

Owns: ``InvalidObject`` and the small typed accessors every parser in ``webhook.api`` uses.
Must not: know any particular kind; each kind's parser lives in the module named after the kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


class InvalidObject(ValueError):
    """A raw object that does not have the shape our schema requires; names the field path."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path


def mapping(raw: object, path: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidObject(path, f"expected an object, got {type(raw).__name__}")
    return raw


def items(raw: object, path: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidObject(path, f"expected a list, got {type(raw).__name__}")
    return raw


def string(raw: object, path: str, *, default: str | None = None) -> str:
    if raw is None:
        if default is None:
            raise InvalidObject(path, "required")
        return default
    if not isinstance(raw, str):
        raise InvalidObject(path, f"expected a string, got {type(raw).__name__}")
    return raw


def one_of(raw: object, path: str, allowed: tuple[str, ...], *, default: str | None = None) -> str:
    """A string that must be one of ``allowed`` (an enum of the schema)."""
    value = string(raw, path, default=default)
    if value not in allowed:
        raise InvalidObject(path, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def optional_string(raw: object, path: str) -> str | None:
    return None if raw is None or raw == "" else string(raw, path)


def integer(raw: object, path: str, *, default: int | None = None) -> int:
    if raw is None:
        if default is None:
            raise InvalidObject(path, "required")
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InvalidObject(path, f"expected an integer, got {raw!r}")
    return raw


def optional_time(raw: object, path: str) -> datetime | None:
    """An RFC 3339 timestamp (``metav1.Time``); one without a zone is read as UTC."""
    if raw is None:
        return None
    text = string(raw, path)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as err:
        raise InvalidObject(path, f"not an RFC 3339 time: {text!r}") from err
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def optional_integer(raw: object, path: str) -> int | None:
    return None if raw is None else integer(raw, path)


def boolean(raw: object, path: str, *, default: bool) -> bool:
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise InvalidObject(path, f"expected a boolean, got {raw!r}")
    return raw


def string_map(raw: object, path: str) -> dict[str, str]:
    return {str(k): string(v, f"{path}.{k}") for k, v in mapping(raw, path).items()}


def first_present(obj: Mapping[str, Any], *keys: str) -> Any:
    """The first of several spellings of a field that is present: lets v1beta1 and v1beta2 share a parser."""
    for key in keys:
        if obj.get(key) is not None:
            return obj[key]
    return None
