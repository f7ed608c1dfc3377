"""Kueue's ``kueue.x-k8s.io/resource-in-use`` finalizer: removing it from one object once its reason is gone, and
when that is for deleted ClusterQueues and ResourceFlavors.

``release_in_use`` is shared by the job side (a Workload lets go once its job has stopped: ``JobSync`` decides
when), the Workload side (orphans: ``WorkloadSync``) and the queue side below. The write carries the
resourceVersion read, so a concurrent change is a conflict, never a lost finalizer of someone else's.

``QueueFinalizers``, Kueue's deletion semantics for the queue side: both kinds get the finalizer when created
(``queue_policy``), so a delete only marks them. Each pass:
1. a terminating ClusterQueue (inactive: it admits nothing new) loses the finalizer once no Workload holds quota
   in it;
2. a terminating ResourceFlavor loses it once no ClusterQueue (terminating or not) lists it.
Must not: decide admission; it only removes a finalizer whose reason is gone.
"""

from __future__ import annotations

import logging

from webhook.api.constants import RESOURCE_IN_USE_FINALIZER
from webhook.api.views import ObjectView, entries
from webhook.controller.cache import ClusterCache
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import CLUSTER_QUEUE, RESOURCE_FLAVOR, Resource
from webhook.logs import object_fields

log = logging.getLogger(__name__)


async def release_in_use(kube: Kube, cache: ClusterCache, resource: Resource, obj: ObjectView) -> bool:
    """Removes the finalizer (if present); returns True when the object is gone (it was being deleted)."""
    meta, key = obj.metadata, obj.key
    finalizers = list(entries(meta, "finalizers"))
    if RESOURCE_IN_USE_FINALIZER not in finalizers:
        return False
    body = dict(obj.raw) | {
        "metadata": dict(meta) | {"finalizers": [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]}
    }
    try:
        result = await kube.replace(resource, body)
    except errors.NotFound:
        cache.forget(resource, key)
        return True
    if meta.get("deletionTimestamp") and not entries(ObjectView.of(result).metadata, "finalizers"):
        cache.forget(resource, key)
        return True
    cache.observe(resource, result)
    return False


def _terminating(obj: ObjectView) -> bool:
    return bool(obj.metadata.get("deletionTimestamp")) and RESOURCE_IN_USE_FINALIZER in entries(
        obj.metadata, "finalizers"
    )


def flavors_of(cq: ObjectView) -> set[str]:
    return {str(f.get("name")) for group in entries(cq.spec, "resourceGroups") for f in entries(group, "flavors")}


class QueueFinalizers:
    def __init__(self, kube: Kube, cache: ClusterCache) -> None:
        self._kube = kube
        self._cache = cache

    async def sync(self) -> None:
        cqs = self._cache.cluster_queues()
        # 1. ClusterQueues with no quota held in them.
        if any(_terminating(cq) for cq in cqs):
            held = (self._cache.typed_workload(w).status for w in self._cache.workloads())
            in_use = {s.admission.cluster_queue for s in held if s.holds_quota and s.admission is not None}
            for cq in cqs:
                if _terminating(cq) and cq.name not in in_use:
                    await self._release(CLUSTER_QUEUE, cq)
        # 2. ResourceFlavors no ClusterQueue lists.
        flavors = [f for f in self._cache.resource_flavors() if _terminating(f)]
        if flavors:
            used = set().union(*(flavors_of(cq) for cq in self._cache.cluster_queues()))
            for flavor in flavors:
                if flavor.name not in used:
                    await self._release(RESOURCE_FLAVOR, flavor)

    async def _release(self, resource: Resource, obj: ObjectView) -> None:
        if await release_in_use(self._kube, self._cache, resource, obj):
            log.info("no longer in use: finalizer removed, deletion proceeds", extra=object_fields(obj.raw))
