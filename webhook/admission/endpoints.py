"""The webhook endpoints Turnstile serves: path, policy, whether it mutates, and what the API server sends it.

One table, read by the HTTP routes (which policy answers a path) and by the registration renderer (which rules
a webhook configuration lists). Must not: import aiohttp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from webhook.admission import job_policy, pod_policy, queue_policy, workload_policy
from webhook.admission.options import BATCH_JOB_FRAMEWORK, POD_FRAMEWORK, AdmissionOptions
from webhook.admission.review import Request
from webhook.admission.verdict import Verdict
from webhook.admission.view import ClusterView
from webhook.api import constants as c

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


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "mjob.turnstile.x-k8s.io",
        "/mutate/batch/v1/jobs",
        job_policy.mutate,
        True,
        "batch",
        ("v1",),
        "Job",
        ("jobs",),
        ("CREATE",),
        workload_kind=True,
        framework=BATCH_JOB_FRAMEWORK,
    ),
    Endpoint(
        "vjob.turnstile.x-k8s.io",
        "/validate/batch/v1/jobs",
        job_policy.validate,
        False,
        "batch",
        ("v1",),
        "Job",
        ("jobs",),
        ("CREATE", "UPDATE"),
        workload_kind=True,
        framework=BATCH_JOB_FRAMEWORK,
    ),
    Endpoint(
        "mpod.turnstile.x-k8s.io",
        "/mutate/v1/pods",
        pod_policy.mutate,
        True,
        "",
        ("v1",),
        "Pod",
        ("pods",),
        ("CREATE",),
        workload_kind=True,
        framework=POD_FRAMEWORK,
    ),
    Endpoint(
        "vpod.turnstile.x-k8s.io",
        "/validate/v1/pods",
        pod_policy.validate,
        False,
        "",
        ("v1",),
        "Pod",
        ("pods",),
        ("CREATE", "UPDATE"),
        workload_kind=True,
        framework=POD_FRAMEWORK,
    ),
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
