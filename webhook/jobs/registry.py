"""The registry of job kinds: every integration Turnstile knows, one line each, and which of them are on.

Owns: ``ADAPTERS`` (in Kueue's framework names) and the lookups the webhooks, watches, reconciler and config use.
Adding a kind is one module implementing ``webhook.jobs.adapter`` and one line here.
Must not: hold state; which kinds are on comes from the configuration, passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from webhook.jobs import batch_job, deployment, jobset, pod_group, ray, statefulset
from webhook.jobs.adapter import JobAdapter, PodOwnerAdapter, SuspendableAdapter

ADAPTERS: tuple[JobAdapter, ...] = (
    batch_job.ADAPTER,
    pod_group.ADAPTER,
    jobset.ADAPTER,
    ray.RAYJOB,
    ray.RAYCLUSTER,
    deployment.ADAPTER,
    statefulset.ADAPTER,
)

DEFAULT_FRAMEWORKS = frozenset({batch_job.ADAPTER.framework})


def names() -> tuple[str, ...]:
    return tuple(a.framework for a in ADAPTERS)


def enabled(frameworks: Iterable[str]) -> tuple[JobAdapter, ...]:
    """The adapters whose framework is on, in registry order."""
    on = set(frameworks)
    return tuple(a for a in ADAPTERS if a.framework in on)


def missing_requirements(frameworks: Iterable[str]) -> list[str]:
    """Why this set of frameworks cannot work: a kind managed through its pods needs the ``pod`` integration."""
    on = set(frameworks)
    return [
        f"{a.framework} needs the {pod_group.ADAPTER.framework!r} integration too (its pods are managed one by one)"
        for a in enabled(on)
        if a.pod_owner and pod_group.ADAPTER.framework not in on
    ]


def suspendable(frameworks: Iterable[str]) -> tuple[SuspendableAdapter, ...]:
    """The enabled kinds the generic job reconciler drives (all but those managed through their pods)."""
    return tuple(cast(SuspendableAdapter, a) for a in enabled(frameworks) if not a.managed_through_pods)


def group_owners(frameworks: Iterable[str]) -> tuple[PodOwnerAdapter, ...]:
    """The enabled kinds whose pods form one pod group sized by the live object (watched, read only)."""
    owners = (cast(PodOwnerAdapter, a) for a in enabled(frameworks) if a.pod_owner)
    return tuple(a for a in owners if a.sizes_group)


def by_kind(group: str, kind: str, frameworks: Iterable[str]) -> JobAdapter | None:
    """The enabled adapter for objects of ``group``/``kind`` (an owner reference's), or None."""
    return next((a for a in enabled(frameworks) if (a.kind.group, a.kind.kind) == (group, kind)), None)
