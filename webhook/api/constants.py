"""Kueue's label, annotation, finalizer, condition and reason strings, so existing tools keep working."""

from __future__ import annotations

from typing import Final

GROUP: Final = "kueue.x-k8s.io"
# The version Turnstile reads and writes; v1beta1 is still served, converted by our /convert webhook.
VERSION: Final = "v1beta2"
API_VERSION: Final = f"{GROUP}/{VERSION}"

# Labels and annotations on jobs and pods.
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
PREBUILT_WORKLOAD_LABEL: Final = "kueue.x-k8s.io/prebuilt-workload-name"
MAX_EXEC_TIME_LABEL: Final = "kueue.x-k8s.io/max-exec-time-seconds"
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
MANAGED_LABEL: Final = "kueue.x-k8s.io/managed"
PODSET_LABEL: Final = "kueue.x-k8s.io/podset"
POD_GROUP_NAME_LABEL: Final = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-total-count"
RETRIABLE_IN_GROUP_ANNOTATION: Final = "kueue.x-k8s.io/retriable-in-group"
# A group whose Workload is created with its first pod, sized by the total count (StatefulSet pods come one by one).
POD_GROUP_FAST_ADMISSION_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-fast-admission"
# A long-running group (serving): its pods are replaced, not finished.
POD_GROUP_SERVING_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-serving"
IS_GROUP_WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/is-group-workload"
JOB_MIN_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-min-parallelism"
STOPPING_ANNOTATION: Final = "kueue.x-k8s.io/stopping"
# Turnstile's own: the name of the Workload that represents a job, stamped by the mutating webhook.
WORKLOAD_NAME_ANNOTATION: Final = "turnstile.x-k8s.io/workload-name"
# Red Hat's build of Kueue opts namespaces in with this label.
OPENSHIFT_MANAGED_NAMESPACE_LABEL: Final = "kueue.openshift.io/managed"

ADMISSION_SCHEDULING_GATE: Final = "kueue.x-k8s.io/admission"
RESOURCE_IN_USE_FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"

DEFAULT_LOCAL_QUEUE: Final = "default"
DEFAULT_PRIORITY_CLASS: Final = "default"
DEFAULT_PODSET_NAME: Final = "main"
MAX_PODSETS: Final = 18

# Workload condition types.
COND_QUOTA_RESERVED: Final = "QuotaReserved"
COND_ADMITTED: Final = "Admitted"
COND_EVICTED: Final = "Evicted"
COND_PREEMPTED: Final = "Preempted"
COND_REQUEUED: Final = "Requeued"
COND_PODS_READY: Final = "PodsReady"
COND_FINISHED: Final = "Finished"

# Priority class sources on v1beta1 Workloads.
WORKLOAD_PRIORITY_CLASS_SOURCE: Final = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE: Final = "scheduling.k8s.io/priorityclass"

# Reasons of QuotaReserved=False on a pending Workload (Kueue v1beta2 UnadmittedWorkloadsObservability).
REASON_QUOTA_RESERVED: Final = "QuotaReserved"
REASON_PENDING: Final = "Pending"
REASON_PENDING_EVALUATION: Final = "PendingEvaluation"
# Pending reasons are written on the Workloads of the first this many waiting in each ClusterQueue (Kueue: the heads).
PENDING_REASON_POSITIONS: Final = 10
REASON_WAITING_FOR_QUOTA: Final = "WaitingForQuota"
REASON_NO_MATCHING_FLAVOR: Final = "NoMatchingFlavor"
REASON_EXCEEDS_MAX_QUOTA: Final = "ExceedsMaxQuota"
REASON_WAITING_FOR_PREEMPTED_WORKLOADS: Final = "WaitingForPreemptedWorkloads"
REASON_MISCONFIGURED: Final = "Misconfigured"
REASON_SUSPENDED: Final = "Suspended"
REASON_INADMISSIBLE: Final = "Inadmissible"  # Kueue: the ClusterQueue is inactive (e.g. terminating)

# Reasons of the Preempted condition on a victim.
PREEMPTED_IN_CLUSTER_QUEUE: Final = "InClusterQueue"
PREEMPTED_IN_COHORT_RECLAMATION: Final = "InCohortReclamation"
PREEMPTED_IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"
PREEMPTED_IN_COHORT_FAIR_SHARING: Final = "InCohortFairSharing"
EVICTED_BY_PREEMPTION: Final = "Preempted"
