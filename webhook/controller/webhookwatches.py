"""The small cache the webhook server answers from, in its own process: only what ``ClusterView`` reads.

Owns: ``WEBHOOK_WATCHES`` and ``AdmittedWorkloads``, the sink that keeps only admitted Workloads. The admission
policies ask about Workloads only to compare a running job with its admission (``workload_is_admitted`` first, then
``workload``), so a Workload without an admission is as good as absent: the webhook's cache holds as many
Workloads as run, not the whole backlog (50,000 pending Workloads stay in the reconciler's process only). The API
server does the filtering (``ADMITTED_SELECTOR``); the sink checks the conditions as well.
Must not: decide anything about the objects.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhook.controller.cache import ClusterCache
from webhook.controller.informer import ChangeType, Informer, WatchSpec
from webhook.controller.supervisor import Supervisor
from webhook.kube import resources as r
from webhook.kube.client import Kube
from webhook.kube.objects import Object
from webhook.kube.resources import Resource

# Workloads with an admission: the field is one of the Workload CRD's selectableFields (manifests/crds).
ADMITTED_SELECTOR = "status.admission.clusterQueue!="

# Every kind a ClusterView answer reads (webhook/admission/view.py): namespaces (labels), LocalQueues and
# WorkloadPriorityClasses (defaults), Cohorts (cycles in the tree), admitted Workloads, LimitRanges and
# RuntimeClasses (pod defaults).
WEBHOOK_WATCHES: tuple[WatchSpec, ...] = (
    WatchSpec(r.NAMESPACE),
    WatchSpec(r.LOCAL_QUEUE),
    WatchSpec(r.COHORT),
    WatchSpec(r.WORKLOAD_PRIORITY_CLASS),
    # Filtered by the API server (the CRD's selectable field): the backlog's pending Workloads are never listed or
    # decoded here, and every pending-reason write the scheduler makes is not an event here either. A Workload
    # whose admission is cleared leaves the selection, which the watch reports as a deletion.
    WatchSpec(r.WORKLOAD, field_selector=ADMITTED_SELECTOR),
    WatchSpec(r.LIMIT_RANGE),
    WatchSpec(r.RUNTIME_CLASS),
)


class AdmittedWorkloads:
    """An ``InformerSink`` in front of the cache that drops every Workload the cache would not call admitted."""

    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache

    def _admitted(self, obj: Object) -> bool:
        return ClusterCache.is_admitted(obj)

    def replace(self, resource: Resource, objects: list[Object]) -> None:
        if resource == r.WORKLOAD:
            objects = [o for o in objects if self._admitted(o)]
        self._cache.replace(resource, objects)

    def apply(self, resource: Resource, change: ChangeType, obj: Object) -> None:
        if resource == r.WORKLOAD and change != "DELETED" and not self._admitted(obj):
            change = "DELETED"  # no longer (or not yet) admitted: forget it
        self._cache.apply(resource, change, obj)


def build_webhook_cache() -> ClusterCache:
    return ClusterCache(spec.resource for spec in WEBHOOK_WATCHES)


def start_webhook_watches(
    kube: Kube, cache: ClusterCache, supervisor: Supervisor, *, specs: Iterable[WatchSpec] = WEBHOOK_WATCHES
) -> list[Informer]:
    sink = AdmittedWorkloads(cache)
    informers = []
    for spec in specs:
        informer = Informer(kube, spec, sink, each=cache.stored_form)
        supervisor.spawn(informer.run(), name=f"watch:{spec.resource}")
        informers.append(informer)
    return informers
