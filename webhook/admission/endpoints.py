"""The webhook endpoints Turnstile serves: path, policy, whether it mutates, and what the API server sends it.

The job kinds' endpoints come from the registry (``webhook.jobs.registry``), two per kind; the queue objects'
are listed here. One table, read by the HTTP routes (which policy answers a path) and by the registration
renderer (which rules a webhook configuration lists). Must not: import aiohttp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from webhook.admission import job_policy, pod_owner_policy, pod_policy, queue_policy, workload_policy
from webhook.admission.options import AdmissionOptions
from webhook.admission.review import Request
from webhook.admission.verdict import Verdict
from webhook.admission.view import ClusterView
from webhook.api import constants as c
from webhook.jobs import registry
from webhook.jobs.adapter import JobAdapter, PodOwnerAdapter, SuspendableAdapter

Policy = Callable[[Request, ClusterView, AdmissionOptions], Verdict]

# Queue objects are reviewed as v1beta2 only: with matchPolicy Equivalent (the default) the API server converts a
# v1beta1 request through our /convert webhook first, as Kueue registers its own webhooks.
KUEUE_VERSIONS = ("v1beta2",)


@dataclass(frozen=True)
class Endpoint:
    name: str  # the webhook's name in the configuration (unique, qualified)
    path: str
    policy: Policy
    mutating: bool
    group: str
    versions: tuple[str, ...]
    kind: str
    resources: tuple[str, ...]
    operations: tuple[str, ...]
    # Jobs and pods live in user namespaces; queue objects are Turnstile's own API, cluster-wide or not.
    workload_kind: bool = False
    framework: str | None = None
    # A kind managed through its pods: only pods Turnstile manages carry validating rules worth failing closed for.
    through_pods: bool = False


def _job_endpoints(adapter: JobAdapter) -> tuple[Endpoint, Endpoint]:
    """The mutating and validating webhooks of one job kind: the shared job rules for a kind suspended as a
    whole, the pod rules (gate, group) for a kind managed through its pods."""
    kind = adapter.kind
    if adapter.pod_owner:
        owner_policy = pod_owner_policy.PodOwnerPolicy(cast(PodOwnerAdapter, adapter))
        mutate, validate = owner_policy.mutate, owner_policy.validate
    elif adapter.managed_through_pods:
        mutate, validate = pod_policy.mutate, pod_policy.validate
    else:
        policy = job_policy.JobPolicy(cast(SuspendableAdapter, adapter))
        mutate, validate = policy.mutate, policy.validate
    route = f"{kind.group}/{kind.version}/{kind.plural}" if kind.group else f"{kind.version}/{kind.plural}"
    short = kind.kind.lower()
    common: dict[str, Any] = {
        "group": kind.group,
        "versions": (kind.version,),
        "kind": kind.kind,
        "resources": (kind.plural,),
        "workload_kind": True,
        "framework": adapter.framework,
        "through_pods": adapter.managed_through_pods and not adapter.pod_owner,
    }
    # A pod owner's template follows its updates (a StatefulSet's group size follows its replicas).
    mutating_operations = ("CREATE", "UPDATE") if adapter.pod_owner else ("CREATE",)
    return (
        Endpoint(
            f"m{short}.turnstile.x-k8s.io", f"/mutate/{route}", mutate, True, operations=mutating_operations, **common
        ),
        Endpoint(
            f"v{short}.turnstile.x-k8s.io",
            f"/validate/{route}",
            validate,
            False,
            operations=("CREATE", "UPDATE"),
            **common,
        ),
    )


ENDPOINTS: tuple[Endpoint, ...] = (
    *(e for adapter in registry.ADAPTERS for e in _job_endpoints(adapter)),
    Endpoint(
        "mresourceflavor.turnstile.x-k8s.io",
        "/mutate/kueue/resourceflavors",
        queue_policy.add_in_use_finalizer,
        True,
        c.GROUP,
        KUEUE_VERSIONS,
        "ResourceFlavor",
        ("resourceflavors",),
        ("CREATE",),
    ),
    Endpoint(
        "vresourceflavor.turnstile.x-k8s.io",
        "/validate/kueue/resourceflavors",
        queue_policy.validate_resource_flavor,
        False,
        c.GROUP,
        KUEUE_VERSIONS,
        "ResourceFlavor",
        ("resourceflavors",),
        ("CREATE", "UPDATE"),
    ),
    Endpoint(
        "mclusterqueue.turnstile.x-k8s.io",
        "/mutate/kueue/clusterqueues",
        queue_policy.add_in_use_finalizer,
        True,
        c.GROUP,
        KUEUE_VERSIONS,
        "ClusterQueue",
        ("clusterqueues",),
        ("CREATE",),
    ),
    Endpoint(
        "vclusterqueue.turnstile.x-k8s.io",
        "/validate/kueue/clusterqueues",
        queue_policy.validate_cluster_queue,
        False,
        c.GROUP,
        KUEUE_VERSIONS,
        "ClusterQueue",
        ("clusterqueues",),
        ("CREATE", "UPDATE"),
    ),
    Endpoint(
        "vcohort.turnstile.x-k8s.io",
        "/validate/kueue/cohorts",
        queue_policy.validate_cohort,
        False,
        c.GROUP,
        KUEUE_VERSIONS,
        "Cohort",
        ("cohorts",),
        ("CREATE", "UPDATE"),
    ),
    Endpoint(
        "vlocalqueue.turnstile.x-k8s.io",
        "/validate/kueue/localqueues",
        queue_policy.validate_local_queue,
        False,
        c.GROUP,
        KUEUE_VERSIONS,
        "LocalQueue",
        ("localqueues",),
        ("CREATE", "UPDATE"),
    ),
    Endpoint(
        "vworkloadpriorityclass.turnstile.x-k8s.io",
        "/validate/kueue/workloadpriorityclasses",
        queue_policy.validate_priority_class,
        False,
        c.GROUP,
        KUEUE_VERSIONS,
        "WorkloadPriorityClass",
        ("workloadpriorityclasses",),
        ("CREATE", "UPDATE"),
    ),
    Endpoint(
        "vworkload.turnstile.x-k8s.io",
        "/validate/kueue/workloads",
        workload_policy.validate,
        False,
        c.GROUP,
        KUEUE_VERSIONS,
        "Workload",
        ("workloads", "workloads/status"),
        ("CREATE", "UPDATE"),
    ),
)


def enabled(options: AdmissionOptions) -> tuple[Endpoint, ...]:
    """The endpoints whose integration is on (queue objects always are)."""
    return tuple(e for e in ENDPOINTS if e.framework is None or e.framework in options.frameworks)
