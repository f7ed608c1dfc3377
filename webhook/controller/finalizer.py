"""Removing Kueue's ``kueue.x-k8s.io/resource-in-use`` finalizer from one object, once its reason is gone.

Shared by the job side (a Workload lets go once its job has stopped), the Workload side (orphans) and the queue
side (deleted ClusterQueues and ResourceFlavors no longer used). The write carries the resourceVersion read, so
a concurrent change is a conflict, never a lost finalizer of someone else's. Must not: decide when.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api.constants import RESOURCE_IN_USE_FINALIZER
from webhook.controller.cache import ClusterCache
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import ObjectKey
from webhook.kube.resources import Resource


async def release_in_use(kube: Kube, cache: ClusterCache, resource: Resource, obj: Mapping[str, Any]) -> bool:
    """Removes the finalizer (if present); returns True when the object is gone (it was being deleted)."""
    meta = obj.get("metadata") or {}
    key = ObjectKey(meta.get("namespace") or "", meta.get("name") or "")
    finalizers = list(meta.get("finalizers") or [])
    if RESOURCE_IN_USE_FINALIZER not in finalizers:
        return False
    body = dict(obj) | {
        "metadata": dict(meta) | {"finalizers": [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]}
    }
    try:
        result = await kube.replace(resource, body)
    except errors.NotFound:
        cache.forget(resource, key)
        return True
    if meta.get("deletionTimestamp") and not (result.get("metadata") or {}).get("finalizers"):
        cache.forget(resource, key)
        return True
    cache.observe(resource, result)
    return False
