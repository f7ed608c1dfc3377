"""What the admission policies are told by Turnstile's configuration (built by ``webhook.config``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from webhook.core.namespace_policy import NamespacePolicy

BATCH_JOB_FRAMEWORK = "batch/job"
POD_FRAMEWORK = "pod"
# Integration name → (API group, kind) of the objects it manages. A Job or Pod whose controller owner has one of
# these kinds is left to that owner's integration (Kueue: "don't suspend a child of a managed parent").
FRAMEWORK_KINDS: dict[str, tuple[str, str]] = {
    BATCH_JOB_FRAMEWORK: ("batch", "Job"),
    POD_FRAMEWORK: ("", "Pod"),
}


@dataclass(frozen=True)
class AdmissionOptions:
    namespaces: NamespacePolicy = field(default_factory=NamespacePolicy.default)
    manage_jobs_without_queue_name: bool = False
    frameworks: frozenset[str] = frozenset({BATCH_JOB_FRAMEWORK})
    # Users allowed to unsuspend jobs and ungate pods: Turnstile's reconciler (its service account or user).
    trusted_users: frozenset[str] = frozenset()

    def manages_kind(self, group: str, kind: str) -> bool:
        return any(FRAMEWORK_KINDS.get(f) == (group, kind) for f in self.frameworks)

    def is_trusted(self, username: str) -> bool:
        return username in self.trusted_users
