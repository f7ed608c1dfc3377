"""WorkloadPriorityClass: a named priority value for Workloads.

Owns: the ``WorkloadPriorityClass`` value type and its parser (value and description are top-level fields,
there is no spec). Must not: decide which class applies to a job; the job adapters do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api import wire


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass:
    name: str
    value: int
    description: str = ""


def parse_workload_priority_class(obj: Mapping[str, Any]) -> WorkloadPriorityClass:
    meta = wire.mapping(obj.get("metadata"), "metadata")
    value = wire.integer(obj.get("value"), "value")
    if not -(2**31) <= value < 2**31:
        raise wire.InvalidObject("value", f"{value} does not fit in int32")
    return WorkloadPriorityClass(
        name=wire.string(meta.get("name"), "metadata.name"),
        value=value,
        description=wire.string(obj.get("description"), "description", default=""),
    )
