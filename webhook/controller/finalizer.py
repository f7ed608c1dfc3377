"""Removing Kueue's ``kueue.x-k8s.io/resource-in-use`` finalizer from one object, once its reason is gone.

Shared by the job side (a Workload lets go once its job has stopped), the Workload side (orphans) and the queue
side (deleted ClusterQueues and ResourceFlavors no longer used). The write carries the resourceVersion read, so
a concurrent change is a conflict, never a lost finalizer of someone else's. Must not: decide when.
"""

from __future__ import annotations

from webhook.api.constants import RESOURCE_IN_USE_FINALIZER
from webhook.api.views import ObjectView, entries
from webhook.controller.cache import ClusterCache
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import ObjectKey
from webhook.kube.resources import Resource


async def release_in_use(kube: Kube, cache: ClusterCache, resource: Resource, obj: ObjectView) -> bool:
    """Removes the finalizer (if present); returns True when the object is gone (it was being deleted)."""
    meta = obj.metadata
    key = ObjectKey(meta.get("namespace") or "", meta.get("name") or "")
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
