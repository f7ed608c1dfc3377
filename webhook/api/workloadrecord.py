"""The read-only view of a Workload as a job adapter reads it: what it recorded of the job, and what was admitted.

Owns: ``WorkloadRecord`` (an ``ObjectView`` of a Workload, with its conditions, activeness and requeue state as the
lifecycle functions read them), ``RecordedPodSet`` (one of its ``spec.podSets``) and ``AssignedPodSet`` (one of
``status.admission.podSetAssignments``). Unlike ``webhook.api.model.Workload`` (the
controller's decoded Workload, without pod templates) it keeps each pod set's template as recorded, which is
what restoring a job and comparing it with its Workload read; quantities stay strings until a rule parses them.
Must not: decide anything about admission or quota, modify the Workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from webhook.api.objectview import ObjectView, PodTemplateView, Raw, entries, section


class _PodSetEntry(msgspec.Struct, frozen=True):
    """An entry of a list keyed by pod set name."""

    raw: Raw

    @property
    def name(self) -> Any:
        """As recorded (None when absent: the schema defaults it, a hand-written object may not)."""
        return self.raw.get("name")

    def name_or(self, default: str) -> Any:
        return self.raw.get("name", default)


class RecordedPodSet(_PodSetEntry, frozen=True):
    @property
    def count(self) -> Any:
        """As recorded (None when absent)."""
        return self.raw.get("count")

    @property
    def template(self) -> PodTemplateView:
        return PodTemplateView.of(self.raw.get("template"))


class AssignedPodSet(_PodSetEntry, frozen=True):
    @property
    def count(self) -> int:
        """The admitted pod count; 0 when not recorded (the pod set's own count then applies)."""
        return int(self.raw.get("count") or 0)

    @property
    def flavors(self) -> Mapping[str, str]:
        """The flavor assigned per resource."""
        return section(self.raw, "flavors")

    @property
    def resource_usage(self) -> Mapping[str, Any]:
        """Quantity per resource charged for ``count`` pods, as written."""
        return section(self.raw, "resourceUsage")


class WorkloadRecord(ObjectView, frozen=True):
    @property
    def conditions(self) -> list[dict[str, Any]]:
        """``status.conditions`` as sent, in a new list (the lifecycle functions build the next list from it)."""
        return list(entries(self.status, "conditions"))

    @property
    def active(self) -> bool:
        """``spec.active``; a Workload is active unless it says otherwise."""
        return bool(self.spec.get("active", True))

    @property
    def requeue_state(self) -> Raw:
        return section(self.status, "requeueState")

    @property
    def pod_sets(self) -> tuple[RecordedPodSet, ...]:
        return tuple(RecordedPodSet(p) for p in entries(self.spec, "podSets"))

    @property
    def assignments(self) -> tuple[AssignedPodSet, ...]:
        return tuple(AssignedPodSet(a) for a in entries(section(self.status, "admission"), "podSetAssignments"))
