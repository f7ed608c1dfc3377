"""Scripted failures for the fake client, so tests can prove retry and rollback paths.

Owns: ``Fault`` (which calls fail, how often, with what error, before or after the write lands) and
``FaultPlan`` (the ordered set of pending faults the fake consults on every call).
Must not: do I/O; it only decides whether a call fails.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field

from webhook.kube.errors import KubeError, Retryable
from webhook.kube.resources import Resource

WRITES: frozenset[str] = frozenset({"create", "replace", "patch", "replace_status", "patch_status", "delete"})
READS: frozenset[str] = frozenset({"get", "list", "watch"})


@dataclass
class Fault:
    verbs: frozenset[str]
    error: KubeError
    remaining: int
    resource: Resource | None = None
    name: str | None = None
    # True: the write is stored, then the error is raised (a timeout after the server committed).
    applied: bool = False
    hits: int = 0

    def matches(self, verb: str, resource: Resource, name: str | None) -> bool:
        return (
            self.remaining > 0
            and verb in self.verbs
            and (self.resource is None or self.resource == resource)
            and (self.name is None or self.name == name)
        )


@dataclass
class FaultPlan:
    faults: list[Fault] = field(default_factory=list)

    def fail_next(
        self,
        verbs: str | Iterable[str] = WRITES,
        *,
        resource: Resource | None = None,
        name: str | None = None,
        error: KubeError | None = None,
        times: int = 1,
        applied: bool = False,
    ) -> Fault:
        """Make the next ``times`` matching calls raise ``error`` (default ``Retryable``).

        ``verbs`` is one verb (``"create"``, ``"patch_status"``, ...) or several; by default every write.
        """
        wanted = frozenset({verbs} if isinstance(verbs, str) else verbs)
        unknown = wanted - WRITES - READS
        if unknown:
            raise ValueError(f"unknown verbs {sorted(unknown)}")
        if applied and wanted & READS:
            raise ValueError("applied=True only makes sense for writes")
        fault = Fault(
            verbs=wanted,
            error=error or Retryable("injected fault", status=503, reason="ServiceUnavailable"),
            remaining=times,
            resource=resource,
            name=name,
            applied=applied,
        )
        self.faults.append(fault)
        return fault

    def take(self, verb: str, resource: Resource, name: str | None) -> Fault | None:
        """The first pending fault for this call, consumed; None when the call should succeed."""
        for fault in self.faults:
            if fault.matches(verb, resource, name):
                fault.remaining -= 1
                fault.hits += 1
                return fault
        return None

    def clear(self) -> None:
        self.faults.clear()


def raised(fault: Fault) -> KubeError:
    """A fresh copy of the fault's error, so each raise gets its own traceback."""
    return copy.copy(fault.error)
