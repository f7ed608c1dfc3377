"""Field errors: what a validation rule found wrong, at which field path, in words a person can act on.

Paths are rendered the way ``kubectl`` users know them (``spec.podSets[0].name``,
``metadata.labels[kueue.x-k8s.io/queue-name]``). Rendering a denial message from a list of errors also lives
here. Must not: know about HTTP or AdmissionReview.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

# A value too long to be useful in a message is cut; hostile objects can carry megabytes in one string.
_MAX_VALUE_CHARS = 120


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def _render(value: object) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


@dataclass(frozen=True)
class FieldError:
    """One problem at one field. ``kind`` reads like Kubernetes' own: Invalid value, Forbidden, Required value…"""

    path: str
    kind: str
    detail: str
    value: object = None
    show_value: bool = False

    def __str__(self) -> str:
        head = f"{self.path}: {self.kind}"
        if self.show_value:
            head += f": {_render(self.value)}"
        return f"{head}: {self.detail}" if self.detail else head


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, "Invalid value", detail, value, show_value=True)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, "Forbidden", detail)


def required(path: str, detail: str) -> FieldError:
    return FieldError(path, "Required value", detail)


def not_supported(path: str, value: object, allowed: Sequence[str]) -> FieldError:
    options = ", ".join(f'"{a}"' for a in allowed)
    return FieldError(path, "Unsupported value", f"supported values: {options}", value, show_value=True)


def immutable(path: str, detail: str = "field is immutable") -> FieldError:
    return FieldError(path, "Invalid value", detail)


def summarize(errors: Sequence[FieldError]) -> str:
    """One message for a denial: a single error as is, several as a bracketed list (like ``kubectl`` prints)."""
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"
