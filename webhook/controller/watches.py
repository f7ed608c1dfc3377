"""Which objects the cache holds, and starting one supervised informer per kind to fill it.

Owns: ``watch_specs`` (kinds and server-side filters: the queue objects, and one watch per enabled job kind of
the registry), ``CACHE_WATCHES`` (those of the batch/job and pod integrations) and ``start_watches``. A kind that
is not enabled is not watched: its API may not even be served.
Must not: decide anything about the objects.

Filters, and why they are enough for now:
- Jobs (and every kind suspended as a whole): all of them. A Job that slipped in unlabelled while the webhook was
  down (in a namespace whose ``default`` LocalQueue the webhook would have given it) must be seen to be queued;
  label selectors cannot select by namespace labels, so the reconciler filters by namespace itself.
- LimitRanges and RuntimeClasses: what the API server will add to a job's pods, so Workloads ask for it.
- Pods (kinds managed through their pods): only managed ones (``kueue.x-k8s.io/managed=true``, stamped by the
  pod webhook).
- Kinds whose pods form one group sized by the live object (StatefulSets): all of them (few, and a queue label
  alone would miss one that slipped past the webhook); never written.
- Everything else: every object of the kind.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhook.api import constants
from webhook.controller.cache import ClusterCache
from webhook.controller.informer import Informer, WatchSpec
from webhook.controller.supervisor import Supervisor
from webhook.jobs import registry
from webhook.jobs.adapter import JobAdapter, JobKind
from webhook.kube import resources as r
from webhook.kube.client import Kube

_BASE_WATCHES: tuple[WatchSpec, ...] = (
    WatchSpec(r.NAMESPACE),
    WatchSpec(r.RESOURCE_FLAVOR),
    WatchSpec(r.CLUSTER_QUEUE),
    WatchSpec(r.COHORT),
    WatchSpec(r.LOCAL_QUEUE),
    WatchSpec(r.WORKLOAD_PRIORITY_CLASS),
    WatchSpec(r.PRIORITY_CLASS),
    WatchSpec(r.WORKLOAD),
    WatchSpec(r.LIMIT_RANGE),
    WatchSpec(r.RUNTIME_CLASS),
)


def resource_of_kind(kind: JobKind) -> r.Resource:
    """A job kind's API resource (namespaced, with a status subresource, as every job kind is)."""
    return r.Resource(kind.group, kind.version, kind.plural, kind.kind, namespaced=True, has_status=True)


def resource_of(adapter: JobAdapter) -> r.Resource:
    return resource_of_kind(adapter.kind)


def watch_specs(frameworks: Iterable[str]) -> tuple[WatchSpec, ...]:
    """The queue objects' watches and one per enabled job kind, in registry order, and one per kind of the
    children they name (so what a parent's controller created is in the cache)."""
    specs = list(_BASE_WATCHES)
    for adapter in registry.enabled(frameworks):
        if adapter.pod_owner:
            continue  # its pods are watched by the pod integration; the kind itself has nothing to reconcile
        if adapter.managed_through_pods:
            spec = WatchSpec(resource_of(adapter), label_selector=f"{constants.MANAGED_LABEL}=true")
        else:
            spec = WatchSpec(resource_of(adapter))
        for child in (spec, *(WatchSpec(resource_of_kind(k)) for k in adapter.children)):
            if all(s.resource != child.resource for s in specs):
                specs.append(child)
    # Read only: the live size of their pods' group (a resize may come through /scale, which no webhook sees).
    specs += [WatchSpec(resource_of(adapter)) for adapter in registry.group_owners(frameworks)]
    return tuple(specs)


CACHE_WATCHES: tuple[WatchSpec, ...] = watch_specs(("batch/job", "pod"))


def build_cache(specs: Iterable[WatchSpec] = CACHE_WATCHES) -> ClusterCache:
    """An empty cache holding exactly the kinds of ``specs``; synced once each has been listed."""
    return ClusterCache(spec.resource for spec in specs)


def start_watches(
    kube: Kube,
    cache: ClusterCache,
    supervisor: Supervisor,
    *,
    specs: Iterable[WatchSpec] = CACHE_WATCHES,
) -> list[Informer]:
    """Start one informer per spec as a supervised task named ``watch:<plural>.<group>``."""
    informers = []
    for spec in specs:
        informer = Informer(kube, spec, cache, each=cache.stored_form)
        supervisor.spawn(informer.run(), name=f"watch:{spec.resource}")
        informers.append(informer)
    return informers
