"""Logging setup: one JSON object per line for the cluster, a readable line for people at a terminal.

Owns: ``configure(level, json=...)`` (the only function that touches the root logger, called once by the CLI),
``JsonFormatter`` and ``TextFormatter``, and ``object_fields``/``key_fields`` for the ``extra=`` of a line about
an object.
Must not: be called on import, or decide what is logged where (callers use ``logging.getLogger(__name__)``).

A line about a Kubernetes object carries its identity as top-level ``kind``/``namespace``/``name`` fields, so
``jq 'select(.name == "my-job")'`` finds everything that happened to it::

    log.info("admitted", extra=object_fields(workload) | {"cluster_queue": "team-a"})
    log.info("deleted", extra=key_fields(kind="Job", namespace=ns, name=name))

Why a helper instead of ``extra={"name": ...}``: the standard library refuses extras named like a LogRecord
attribute (``name`` is the logger's), so the identity travels under one private key and is flattened on output.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TextIO

import orjson

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_RECORD_ATTRS: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
# The extra key the identity travels under; the formatters flatten it.
_OBJECT: Final = "k8s_object"


def key_fields(*, kind: str = "", namespace: str = "", name: str = "") -> dict[str, Any]:
    """``extra=`` for a line about the object ``kind`` ``namespace/name`` (empty parts are left out)."""
    identity = {"kind": kind, "namespace": namespace, "name": name}
    return {_OBJECT: {k: v for k, v in identity.items() if v}}


def object_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``extra=`` for a line about a Kubernetes object as JSON decodes it (its kind, namespace and name)."""
    meta = obj.get("metadata") or {}
    return key_fields(kind=obj.get("kind") or "", namespace=meta.get("namespace") or "", name=meta.get("name") or "")


def _split(record: logging.LogRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the object's identity, the other extras) of a record."""
    extra = {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRS and not k.startswith("_")}
    identity = extra.pop(_OBJECT, None)
    return (dict(identity) if isinstance(identity, Mapping) else {}), extra


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", <extra fields>..., "exception"?}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        identity, extra = _split(record)
        for key, value in (identity | extra).items():
            line.setdefault(key, value)  # an extra can never hide the line's own fields
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # default=str: an extra that is not JSON (a Path, an exception) is written as text, never dropped.
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    """``HH:MM:SS level logger: message kind/namespace/name key=value...`` for terminals and the CLI."""

    def format(self, record: logging.LogRecord) -> str:
        fields, extra = _split(record)
        identity = "/".join(str(v) for v in fields.values())
        parts = [
            datetime.fromtimestamp(record.created).strftime("%H:%M:%S"),
            f"{record.levelname.lower():7}",
            f"{record.name}: {record.getMessage()}",
        ]
        if identity:
            parts.append(f"[{identity}]")
        parts.extend(f"{k}={v}" for k, v in extra.items())
        text = " ".join(parts)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure(level: int | str = logging.INFO, *, json: bool = True, stream: TextIO | None = None) -> None:
    """Send every logger's records to ``stream`` (stderr) in one format, replacing earlier handlers.

    Safe to call again (tests, a CLI that reconfigures): handlers are replaced, never stacked.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json else TextFormatter())
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    # aiohttp's access log is one line per webhook call: the metrics count those, the log would drown.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
