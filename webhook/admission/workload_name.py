"""The name of the Workload that represents a job, computable at admission time (before the job has a UID).

Kueue names a job's Workload ``<kind>-<owner name>-<first 5 hex of sha1(kind, group, name, uid)>``. The UID
does not exist while the mutating webhook runs, so Turnstile hashes what it knows and what can never change
for the life of the object: ``sha1("<Kind>\\n<group>\\n<namespace>\\n<name>")``. The prefix is kept as Kueue's
(``job-<name>``, truncated so the whole name fits 253 characters) so ``kubectl get workloads | grep job-foo``
habits keep working. A job deleted and re-created under the same name maps to the same Workload name; the
reconciler tells them apart by the Workload's owner reference UID and replaces a stale one. Pod groups use the
group name, as in Kueue. Objects created with ``generateName`` have no name during admission: they get no
stamp, and the reconciler computes the name from the final object with this same function.
"""

from __future__ import annotations

import hashlib

_MAX_LENGTH = 253
_HASH_CHARS = 5


def workload_name(*, kind: str, group: str, namespace: str, name: str) -> str:
    digest = hashlib.sha1(f"{kind}\n{group}\n{namespace}\n{name}".encode(), usedforsecurity=False)
    prefix = f"{kind.lower()}-{name}"[: _MAX_LENGTH - _HASH_CHARS - 1].rstrip("-.")
    return f"{prefix}-{digest.hexdigest()[:_HASH_CHARS]}"


def for_job(namespace: str, name: str) -> str:
    return workload_name(kind="Job", group="batch", namespace=namespace, name=name)


def for_pod(namespace: str, name: str, group_name: str) -> str:
    """A pod group's Workload is named after the group; a single pod's after the pod."""
    if group_name:
        return group_name
    return workload_name(kind="Pod", group="", namespace=namespace, name=name)
