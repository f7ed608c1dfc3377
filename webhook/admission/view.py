"""What the admission policies may know about the cluster: a read-only view of the in-memory cache.

The webhook answers from this view only, never from the API server. The controller's cache implements it;
unit tests use ``StaticView``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from webhook.api.views import WorkloadRecord
from webhook.jobs.poddefaults import PodDefaults


class ClusterView(Protocol):
    def synced(self) -> bool:
        """True once every watch the webhook relies on has listed its objects at least once."""
        ...

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of a namespace, or None when the namespace is not known."""
        ...

    def has_local_queue(self, namespace: str, name: str) -> bool: ...

    def cohort_parents(self) -> Mapping[str, str | None]:
        """Every known Cohort's ``spec.parentName`` (None for a root), by Cohort name."""
        ...

    def has_workload_priority_class(self, name: str) -> bool: ...

    def workload_is_admitted(self, namespace: str, name: str) -> bool:
        """True when that Workload exists and has quota reserved and is admitted."""
        ...

    def workload(self, namespace: str, name: str) -> WorkloadRecord | None:
        """The Workload object as last seen, or None."""
        ...

    def pod_defaults(self, namespace: str) -> PodDefaults:
        """What the API server adds to pods in ``namespace`` (LimitRange defaults, RuntimeClass overhead)."""
        ...


@dataclass
class StaticView:
    """A ClusterView over plain data, for tests and for tools that run without watches."""

    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    local_queues: set[tuple[str, str]] = field(default_factory=set)
    priority_classes: set[str] = field(default_factory=set)
    admitted_workloads: set[tuple[str, str]] = field(default_factory=set)
    workloads: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    defaults: PodDefaults = field(default_factory=PodDefaults)
    is_synced: bool = True
    cohorts: dict[str, str | None] = field(default_factory=dict)  # name -> parentName

    def synced(self) -> bool:
        return self.is_synced

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.namespaces.get(name)

    def has_local_queue(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.local_queues

    def cohort_parents(self) -> Mapping[str, str | None]:
        return self.cohorts

    def has_workload_priority_class(self, name: str) -> bool:
        return name in self.priority_classes

    def workload_is_admitted(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.admitted_workloads

    def workload(self, namespace: str, name: str) -> WorkloadRecord | None:
        raw = self.workloads.get((namespace, name))
        return None if raw is None else WorkloadRecord.of(raw)

    def pod_defaults(self, namespace: str) -> PodDefaults:
        return self.defaults
