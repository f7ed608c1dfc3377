"""The read-only typed view of a batch/v1 Job: the fields of its spec and status the batch Job adapter reads.

Owns: ``BatchJob`` (an ``ObjectView`` of a Job). Counts are read as the Job controller reports them (a missing
count is zero); ``parallelism`` defaults to one as the API server defaults it.
Must not: decide anything about admission or quota, modify the Job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.objectview import ObjectView, PodTemplateView, entries, section


class BatchJob(ObjectView, frozen=True):
    """A batch/v1 Job as the API server sent it."""

    @property
    def suspend(self) -> bool:
        return bool(self.spec.get("suspend"))

    @property
    def parallelism(self) -> int:
        value = self.spec.get("parallelism")
        return 1 if value is None else int(value)

    @property
    def completions(self) -> int | None:
        value = self.spec.get("completions")
        return None if value is None else int(value)

    @property
    def pod_count(self) -> int:
        """Pods that run at once: parallelism, capped by completions when set (Kueue's PodSet count)."""
        parallelism, completions = self.parallelism, self.completions
        return parallelism if completions is None else min(parallelism, completions)

    @property
    def template(self) -> PodTemplateView:
        return PodTemplateView.of(self.spec.get("template"))

    @property
    def active(self) -> int:
        return int(self.status.get("active") or 0)

    @property
    def ready(self) -> int:
        return int(self.status.get("ready") or 0)

    @property
    def succeeded(self) -> int:
        return int(self.status.get("succeeded") or 0)

    @property
    def uncounted_succeeded(self) -> int:
        """Pods that succeeded but that the Job controller has not counted yet (between its two status writes)."""
        return len(entries(section(self.status, "uncountedTerminatedPods"), "succeeded"))

    @property
    def started(self) -> bool:
        """``status.startTime`` is set: the Job controller started it (and has not cleared it on suspension)."""
        return bool(self.status.get("startTime"))

    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        return entries(self.status, "conditions")

    def has_condition(self, type_: str) -> bool:
        """Some condition of ``type_`` says True."""
        return any(c.get("type") == type_ and c.get("status") == "True" for c in self.conditions)
