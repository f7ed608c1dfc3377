"""The name of the Workload that represents a job.

Kueue hashes the owner's UID into the name; a mutating webhook never knows the UID (it is assigned after
admission), so Turnstile hashes the owner's kind, group, namespace and name instead. The webhook can then stamp
the final name on the Job while it is being created, and the reconciler creates exactly that Workload. A Job
deleted and created again under the same name maps to the same Workload name: the reconciler tells the two apart
by the owner UID and replaces a Workload whose owner is gone.
"""

from __future__ import annotations

import hashlib

MAX_NAME_LENGTH = 253
MAX_LABEL_VALUE_LENGTH = 63
HASH_LENGTH = 5


def workload_name(*, kind: str, group: str, namespace: str, name: str, limit: int = MAX_NAME_LENGTH) -> str:
    """``<kind>-<name>-<hash>``, lower case, at most ``limit`` characters, stable for the same owner identity
    (``MAX_LABEL_VALUE_LENGTH`` when the name is also a label value: a pod group's)."""
    digest = hashlib.sha1(f"{kind}\n{group}\n{namespace}\n{name}".encode(), usedforsecurity=False).hexdigest()
    prefix = f"{kind.lower()}-{name}"[: limit - HASH_LENGTH - 1].rstrip("-.")
    return f"{prefix}-{digest[:HASH_LENGTH]}"


def job_workload_name(namespace: str, name: str) -> str:
    """The Workload name of a batch/v1 Job."""
    return workload_name(kind="Job", group="batch", namespace=namespace, name=name)


def pod_workload_name(namespace: str, name: str, group_name: str) -> str:
    """A pod group's Workload is named after the group (as in Kueue); a single pod's after the pod."""
    if group_name:
        return group_name
    return workload_name(kind="Pod", group="", namespace=namespace, name=name)
