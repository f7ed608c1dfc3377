"""Which objects the cache holds, and starting one supervised informer per kind to fill it.

Owns: ``CACHE_WATCHES`` (kinds and server-side filters) and ``start_watches``.
Must not: decide anything about the objects.

Filters, and why they are enough for now:
- Jobs: all of them. A Job that slipped in unlabelled while the webhook was down (in a namespace whose
  ``default`` LocalQueue the webhook would have given it) must be seen to be queued; label selectors cannot
  select by namespace labels, so the reconciler filters by namespace itself.
- LimitRanges and RuntimeClasses: what the API server will add to a job's pods, so Workloads ask for it.
- Pods: only managed ones (``kueue.x-k8s.io/managed=true``, stamped by the pod webhook).
- Everything else: every object of the kind.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhook.api import constants
from webhook.controller.cache import ClusterCache
from webhook.controller.informer import Informer, WatchSpec
from webhook.controller.supervisor import Supervisor
from webhook.kube import resources as r
from webhook.kube.client import Kube

CACHE_WATCHES: tuple[WatchSpec, ...] = (
    WatchSpec(r.NAMESPACE),
    WatchSpec(r.RESOURCE_FLAVOR),
    WatchSpec(r.CLUSTER_QUEUE),
    WatchSpec(r.COHORT),
    WatchSpec(r.LOCAL_QUEUE),
    WatchSpec(r.WORKLOAD_PRIORITY_CLASS),
    WatchSpec(r.PRIORITY_CLASS),
    WatchSpec(r.WORKLOAD),
    WatchSpec(r.JOB),
    WatchSpec(r.LIMIT_RANGE),
    WatchSpec(r.RUNTIME_CLASS),
    WatchSpec(r.POD, label_selector=f"{constants.MANAGED_LABEL}=true"),
)


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
        informer = Informer(kube, spec, cache)
        supervisor.spawn(informer.run(), name=f"watch:{spec.resource}")
        informers.append(informer)
    return informers
