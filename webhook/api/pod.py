"""The read-only typed view of a Pod: what the pod integration reads of its spec and status.

Owns: ``Pod`` (an ``ObjectView`` of a core/v1 Pod): its scheduling gates, phase, readiness and deletion.
Must not: decide anything about admission or quota, modify the Pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.objectview import ObjectView, entries

TERMINAL_PHASES = ("Succeeded", "Failed")


class Pod(ObjectView, frozen=True):
    """A Pod as the API server sent it."""

    @property
    def scheduling_gates(self) -> Sequence[Mapping[str, Any]]:
        return entries(self.spec, "schedulingGates")

    def gated(self, gate: str) -> bool:
        """The pod waits behind the scheduling gate named ``gate``."""
        return any(g.get("name") == gate for g in self.scheduling_gates)

    @property
    def phase(self) -> str | None:
        phase: str | None = self.status.get("phase")
        return phase

    @property
    def terminal(self) -> bool:
        """Succeeded or Failed: its containers will not run again."""
        return self.phase in TERMINAL_PHASES

    @property
    def ready(self) -> bool:
        """Its ``Ready`` condition says True."""
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in entries(self.status, "conditions"))

    @property
    def deletion_timestamp(self) -> str | None:
        """When it was deleted (it stays while its containers stop), or None."""
        value = self.metadata.get("deletionTimestamp")
        return str(value) if value else None

    @property
    def deletion_grace_seconds(self) -> int:
        return int(self.metadata.get("deletionGracePeriodSeconds") or 0)
