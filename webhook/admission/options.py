"""What the admission policies are told by Turnstile's configuration (built by ``webhook.config``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from webhook.core.namespace_policy import NamespacePolicy
from webhook.jobs import registry

POD_FRAMEWORK = "pod"
# Integration name → (API group, kind) of the objects it manages, from the registry. A job or pod whose
# controller owner has one of these kinds is left to that owner's integration (Kueue: "don't suspend a child of
# a managed parent").
FRAMEWORK_KINDS: dict[str, tuple[str, str]] = {a.framework: (a.kind.group, a.kind.kind) for a in registry.ADAPTERS}


@dataclass(frozen=True)
class AdmissionOptions:
    namespaces: NamespacePolicy = field(default_factory=NamespacePolicy.default)
    manage_jobs_without_queue_name: bool = False
    frameworks: frozenset[str] = registry.DEFAULT_FRAMEWORKS
    # Users allowed to unsuspend jobs and ungate pods: Turnstile's reconciler (its service account or user).
    trusted_users: frozenset[str] = frozenset()

    def manages_kind(self, group: str, kind: str) -> bool:
        """Whether an enabled integration takes over the objects this kind owns (a pod owner leaves its pods to
        the pod integration: a StatefulSet's pods are queued as pods)."""
        adapter = registry.by_kind(group, kind, self.frameworks)
        return adapter is not None and not adapter.pod_owner

    def is_trusted(self, username: str) -> bool:
        return username in self.trusted_users
