"""Which namespaces Turnstile manages: a Kueue-style selector, an optional opt-in label, and protected names.

``kube-system`` and Turnstile's own namespace are never managed, whatever the selector says. When a namespace
is not (yet) in the cache, its labels are taken to be ``kubernetes.io/metadata.name: <name>``, which the API
server sets on every namespace and nobody can change, so selectors on the name still decide correctly.
Must not: read the cluster (the caller passes the labels it found in the cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from webhook.api.selector import LabelSelector, Requirement, matches

NAME_LABEL = "kubernetes.io/metadata.name"
KUBE_SYSTEM = "kube-system"
DEFAULT_OWN_NAMESPACE = "turnstile-system"


def default_selector(own_namespace: str = DEFAULT_OWN_NAMESPACE) -> LabelSelector:
    """Kueue's default: every namespace except kube-system and our own."""
    return LabelSelector((Requirement(NAME_LABEL, "NotIn", frozenset({KUBE_SYSTEM, own_namespace})),))


@dataclass(frozen=True)
class NamespacePolicy:
    selector: LabelSelector
    own_namespace: str = DEFAULT_OWN_NAMESPACE
    # When set, only namespaces labelled ``<opt_in_label>=true`` are managed (e.g. kueue.openshift.io/managed).
    opt_in_label: str | None = None

    @classmethod
    def default(cls, own_namespace: str = DEFAULT_OWN_NAMESPACE) -> NamespacePolicy:
        return cls(default_selector(own_namespace), own_namespace)

    def is_protected(self, namespace: str) -> bool:
        return namespace in (KUBE_SYSTEM, self.own_namespace)

    def is_managed(self, namespace: str, labels: Mapping[str, str] | None) -> bool:
        if not namespace or self.is_protected(namespace):
            return False
        effective = labels if labels is not None else {NAME_LABEL: namespace}
        if self.opt_in_label is not None and effective.get(self.opt_in_label) != "true":
            return False
        return matches(self.selector, effective)
