"""Usage: what admitted Workloads hold, per ClusterQueue, flavor and resource.

Owns: reading a Workload's ``status.admission`` into usage, and summing it per ClusterQueue; the reconciler
uses ``cluster_queue_usage`` for ClusterQueue status, the scheduler uses ``usage_nano`` to fill its book.
Must not: decide whether usage is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhook.api.quantity import Quantity
from webhook.api.workload import Workload
from webhook.core.quota import FlavorResource


def workload_usage(workload: Workload) -> dict[FlavorResource, Quantity]:
    """Per (flavor, resource): the totals recorded in ``status.admission`` (empty when not admitted).

    A resource without a flavor in the assignment cannot be charged to any quota and is skipped.
    """
    out: dict[FlavorResource, Quantity] = {}
    if workload.admission is None:
        return out
    for psa in workload.admission.pod_set_assignments:
        for resource, q in psa.resource_usage.items():
            flavor = psa.flavors.get(resource)
            if flavor is None:
                continue
            fr = (flavor, resource)
            out[fr] = out[fr] + q if fr in out else q
    return out


def usage_nano(workload: Workload) -> dict[FlavorResource, int]:
    return {fr: q.nano for fr, q in workload_usage(workload).items()}


def cluster_queue_usage(cluster_queue: str, workloads: Iterable[Workload]) -> dict[FlavorResource, Quantity]:
    """Total usage of the workloads that hold quota in ``cluster_queue`` (finished ones release theirs)."""
    out: dict[FlavorResource, Quantity] = {}
    for wl in workloads:
        if not wl.holds_quota or wl.admission is None or wl.admission.cluster_queue != cluster_queue:
            continue
        for fr, q in workload_usage(wl).items():
            out[fr] = out[fr] + q if fr in out else q
    return out
