"""The batch/v1 Job integration: a Job becomes a Workload with one PodSet; admission releases it.

Pure transformations of Job and Workload objects (dicts). The reconciler decides *when* to call them and writes
the results with optimistic concurrency; nothing here talks to the API server.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from webhook.api.constants import (
    API_VERSION,
    DEFAULT_PODSET_NAME,
    JOB_MIN_PARALLELISM_ANNOTATION,
    JOB_UID_LABEL,
    MAX_EXEC_TIME_LABEL,
    RESOURCE_IN_USE_FINALIZER,
    STOPPING_ANNOTATION,
)
from webhook.api.quantity import ZERO, parse_quantity
from webhook.api.resources import pod_requests
from webhook.api.workload import priority_class_ref_wire
from webhook.jobs.adapter import Finish, JobKind, Problem
from webhook.jobs.naming import job_workload_name
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo, inject, restore
from webhook.jobs.suspendable import adopted, is_stamped, owned_by_controller, queue_name

JSON = dict[str, Any]
# Shared with every suspendable kind; named here too because batch Job callers and tests know them by this module.
__all__ = ["ADAPTER", "adopted", "is_stamped", "owned_by_controller", "queue_name"]

KIND = "Job"
GROUP = "batch"
# Labels the Job controller adds to the template; they identify one Job's pods and must not enter the Workload.
_CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def is_suspended(job: Mapping[str, Any]) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def finished(job: Mapping[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the Job's Complete/Failed conditions."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return True, True, condition.get("message") or "Job finished successfully"
        if condition.get("type") == "Failed":
            return True, False, condition.get("message") or condition.get("reason") or "Job failed"
    return False, False, ""


def pods_ready(job: Mapping[str, Any]) -> bool:
    """All the pods it runs at once are ready or already succeeded (Kueue's PodsReady for a batch Job).

    Pods that succeeded but that the Job controller has not counted yet (``uncountedTerminatedPods``, between
    its two status writes) count as succeeded: otherwise every Job would look not ready for a moment as it ends.
    """
    status = job.get("status") or {}
    uncounted = len((status.get("uncountedTerminatedPods") or {}).get("succeeded") or [])
    return int(status.get("ready") or 0) + int(status.get("succeeded") or 0) + uncounted >= pod_count(job)


def pod_count(job: Mapping[str, Any]) -> int:
    """Pods that run at once: parallelism, capped by completions when set (Kueue's PodSet count)."""
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))


def podsets(job: Mapping[str, Any], defaults: PodDefaults | None = None) -> list[JSON]:
    """The Workload's ``spec.podSets`` for this Job: one PodSet named ``main``, its template as the API server
    will admit the pods (``defaults``: the namespace's LimitRange defaults and RuntimeClass overhead)."""
    spec = job.get("spec") or {}
    template = (defaults or PodDefaults()).apply(spec.get("template") or {})
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        for key in _CONTROLLER_UID_LABELS:
            labels.pop(key, None)
    podset: JSON = {"name": DEFAULT_PODSET_NAME, "count": pod_count(job), "template": template}
    min_parallelism = ((job.get("metadata") or {}).get("annotations") or {}).get(JOB_MIN_PARALLELISM_ANNOTATION)
    if min_parallelism is not None:
        podset["minCount"] = int(min_parallelism)
    return [podset]


def max_execution_time(job: Mapping[str, Any]) -> int | None:
    value = ((job.get("metadata") or {}).get("labels") or {}).get(MAX_EXEC_TIME_LABEL)
    return int(value) if value is not None else None


def workload_for(
    job: Mapping[str, Any],
    *,
    priority: int,
    priority_class_name: str | None = None,
    priority_class_source: str = "",
    defaults: PodDefaults | None = None,
) -> JSON:
    """The Workload that represents ``job``, owned by it (a controller owner reference), with Kueue's
    ``resource-in-use`` finalizer: while it holds quota, deleting it must not free the quota before the job
    has stopped (the reconciler removes the finalizer then)."""
    meta = job["metadata"]
    workload: JSON = {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": job_workload_name(meta["namespace"], meta["name"]),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            "finalizers": [RESOURCE_IN_USE_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": KIND,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"podSets": podsets(job, defaults), "priority": priority},
    }
    spec = workload["spec"]
    if (queue := queue_name(job)) is not None:
        spec["queueName"] = queue
    if priority_class_name and priority_class_source:
        spec["priorityClassRef"] = priority_class_ref_wire(priority_class_source, priority_class_name)
    if (seconds := max_execution_time(job)) is not None:
        spec["maximumExecutionTimeSeconds"] = seconds
    return workload


def matches_workload(job: Mapping[str, Any], workload: Mapping[str, Any], defaults: PodDefaults | None = None) -> bool:
    """Whether ``workload`` still describes ``job`` (owner, pod count and template of a suspended job)."""
    owners = (workload.get("metadata") or {}).get("ownerReferences") or []
    uid = job["metadata"].get("uid")
    if not any(o.get("uid") == uid and o.get("controller") for o in owners):
        return False
    wl_podsets = (workload.get("spec") or {}).get("podSets") or []
    expected = podsets(job, defaults)
    if len(wl_podsets) != 1:
        return False
    if wl_podsets[0].get("count") != expected[0]["count"]:
        return False
    # Once released, the template carries injected flavors; compare containers only, which admission never edits.
    return bool(_containers(wl_podsets[0].get("template")) == _containers(expected[0]["template"]))


def admission_mismatch(
    job: Mapping[str, Any], workload: Mapping[str, Any], defaults: PodDefaults | None = None
) -> str | None:
    """Why the admitted ``workload`` does not cover ``job`` as it is now, or None when it does.

    Kueue's "no matching Workload" check for an admitted job, on what quota is about: the job may run no more
    pods than its pod set was admitted with, and each pod (as the API server will admit it: LimitRange defaults,
    RuntimeClass overhead, requests from limits) may ask for no more of any resource than the admission charged
    per pod. A job that asks for less keeps running; one that asks for more is stopped and queued again.
    """
    admitted = _admitted_pod_set(workload)
    if admitted is None:
        return f"the Workload has no admission for pod set {DEFAULT_PODSET_NAME!r} alone"
    count, usage = admitted
    wanted = pod_count(job)
    if wanted > count:
        return f"the job runs {wanted} pods at once; its Workload was admitted for {count}"
    template = (defaults or PodDefaults()).apply((job.get("spec") or {}).get("template") or {})
    return _pod_excess(template, usage, count)


def _admitted_pod_set(workload: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]] | None:
    """The pod count and resource usage the Workload's one pod set was admitted with; None unless its admission
    is for exactly that pod set."""
    spec_sets = {p.get("name", DEFAULT_PODSET_NAME): p for p in (workload.get("spec") or {}).get("podSets") or []}
    assignments = ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    admitted = next((a for a in assignments if a.get("name", DEFAULT_PODSET_NAME) == DEFAULT_PODSET_NAME), None)
    if admitted is None or len(assignments) != 1 or DEFAULT_PODSET_NAME not in spec_sets:
        return None
    count = int(admitted.get("count") or spec_sets[DEFAULT_PODSET_NAME].get("count") or 0)
    return count, admitted.get("resourceUsage") or {}


def _pod_excess(template: Mapping[str, Any], usage: Mapping[str, Any], count: int) -> str | None:
    """Why a pod of ``template`` asks for more of a resource than ``usage`` charged per pod of ``count``, or None."""
    try:
        per_pod = pod_requests(template.get("spec") or {})
        charged = {r: parse_quantity(q) for r, q in usage.items()}
    except ValueError as exc:
        return f"cannot compare the job's requests with its admission: {exc}"
    for resource, quantity in sorted(per_pod.items()):
        allowed = charged.get(resource, ZERO)
        if quantity * max(count, 1) > allowed and quantity > ZERO:
            return (
                f"each pod asks for {quantity} {resource}; the Workload was admitted with {allowed} "
                f"{resource} for {count} pods"
            )
    return None


def _containers(template: Any) -> Any:
    spec = (template or {}).get("spec") or {}
    return (spec.get("containers"), spec.get("initContainers"))


def released(job: Mapping[str, Any], infos: Mapping[str, PodSetInfo], *, admitted_count: int | None = None) -> JSON:
    """The Job unsuspended, with the admitted flavors injected into its template."""
    result = copy.deepcopy(dict(job))
    spec = result["spec"]
    info = infos.get(DEFAULT_PODSET_NAME)
    if info is not None:
        spec["template"] = inject(spec.get("template") or {}, info)
    if admitted_count is not None and admitted_count < pod_count(job):
        # Partial admission: run only as many pods as were admitted.
        spec["parallelism"] = admitted_count
    spec["suspend"] = False
    annotations = result["metadata"].get("annotations") or {}
    annotations.pop(STOPPING_ANNOTATION, None)
    return result


def suspended(job: Mapping[str, Any]) -> JSON:
    """Step 1 of stopping: the Job suspended and marked as stopping (its pods are being removed)."""
    result = copy.deepcopy(dict(job))
    result["spec"]["suspend"] = True
    result["metadata"].setdefault("annotations", {})[STOPPING_ANNOTATION] = "true"
    return result


def is_stopping(job: Mapping[str, Any]) -> bool:
    """Suspended by ``suspended`` but its template not yet ``restored``."""
    return STOPPING_ANNOTATION in ((job.get("metadata") or {}).get("annotations") or {})


def template_mutable(job: Mapping[str, Any]) -> bool:
    """Whether the API server accepts changes to the scheduling directives of the Job's pod template now.

    Only a suspended Job with no active pods that never started, or that the Job controller has marked
    ``Suspended=True`` (Kubernetes 1.36 validation), may change them; before that a restore is refused as
    "field is immutable".
    """
    status = job.get("status") or {}
    if not is_suspended(job) or status.get("active"):
        return False
    if not status.get("startTime"):
        return True
    return any(c.get("type") == "Suspended" and c.get("status") == "True" for c in status.get("conditions") or [])


def restored(job: Mapping[str, Any], workload: Mapping[str, Any]) -> JSON:
    """Step 2 of stopping (after ``status.startTime`` is cleared): the template and parallelism as recorded."""
    result = copy.deepcopy(dict(job))
    wl_podsets = (workload.get("spec") or {}).get("podSets") or []
    if wl_podsets:
        original = wl_podsets[0]
        result["spec"]["template"] = restore(result["spec"].get("template") or {}, original.get("template") or {})
        parallelism = result["spec"].get("parallelism")
        if parallelism is not None and parallelism < original.get("count", parallelism):
            result["spec"]["parallelism"] = original["count"]
    annotations = result["metadata"].get("annotations") or {}
    annotations.pop(STOPPING_ANNOTATION, None)
    if not annotations:
        result["metadata"].pop("annotations", None)
    return result


# The adapter -------------------------------------------------------------------------------------------------

_MIN_PARALLELISM_PATH = f"metadata.annotations[{JOB_MIN_PARALLELISM_ANNOTATION}]"


def _parse_int(raw: str) -> int | None:
    text = raw.strip()
    if not text or len(text) > 12 or not text.lstrip("+-").isdigit():
        return None
    return int(text)


def _min_parallelism_problems(job: Mapping[str, Any]) -> list[Problem]:
    raw = ((job.get("metadata") or {}).get("annotations") or {}).get(JOB_MIN_PARALLELISM_ANNOTATION)
    if raw is None:
        return []
    value = _parse_int(str(raw))
    count = pod_count(job)
    if value is None:
        return [Problem(_MIN_PARALLELISM_PATH, str(raw), "must be a whole number of pods")]
    if not 0 < value < count:
        return [
            Problem(
                _MIN_PARALLELISM_PATH,
                str(raw),
                f"must be between 1 and {count - 1} (the job runs {count} pods at once); "
                "partial admission needs fewer pods than the job's parallelism",
            )
        ]
    return []


class BatchJobAdapter:
    """batch/v1 Job: one pod set ``main``; partial admission through ``job-min-parallelism``."""

    framework = "batch/job"
    kind = JobKind(GROUP, "v1", "jobs", KIND)
    managed_through_pods = False
    pod_owner = False
    children: tuple[JobKind, ...] = ()

    def pod_sets(self, job: Mapping[str, Any], defaults: PodDefaults) -> list[JSON]:
        return podsets(job, defaults)

    def pod_count(self, job: Mapping[str, Any]) -> int:
        return pod_count(job)

    def priority_template(self, job: Mapping[str, Any]) -> Mapping[str, Any]:
        return ((job.get("spec") or {}).get("template") or {}).get("spec") or {}

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return is_suspended(job)

    def suspended(self, job: Mapping[str, Any]) -> JSON:
        return suspended(job)

    def is_stopping(self, job: Mapping[str, Any]) -> bool:
        return is_stopping(job)

    def template_mutable(self, job: Mapping[str, Any]) -> bool:
        return template_mutable(job)

    def has_active_pods(self, job: Mapping[str, Any]) -> bool:
        return bool((job.get("status") or {}).get("active"))

    def released(self, job: Mapping[str, Any], infos: Mapping[str, PodSetInfo], counts: Mapping[str, int]) -> JSON:
        return released(job, infos, admitted_count=counts.get(DEFAULT_PODSET_NAME))

    def restored(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> JSON:
        return restored(job, workload)

    def finished(self, job: Mapping[str, Any]) -> Finish:
        done, succeeded, message = finished(job)
        return Finish(done, succeeded, message)

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return pods_ready(job)

    def matches_workload(self, job: Mapping[str, Any], workload: Mapping[str, Any], defaults: PodDefaults) -> bool:
        return matches_workload(job, workload, defaults)

    def admission_mismatch(
        self, job: Mapping[str, Any], workload: Mapping[str, Any], defaults: PodDefaults
    ) -> str | None:
        return admission_mismatch(job, workload, defaults)

    def shape_changed(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        template = ((old.get("spec") or {}).get("template"), (new.get("spec") or {}).get("template"))
        return pod_count(old) != pod_count(new) or template[0] != template[1]

    def create_problems(self, job: Mapping[str, Any], *, managed: bool) -> list[Problem]:
        return _min_parallelism_problems(job)

    def update_problems(self, old: Mapping[str, Any], new: Mapping[str, Any], *, managed: bool) -> list[Problem]:
        problems: list[Problem] = []
        old_annotations = (old.get("metadata") or {}).get("annotations") or {}
        new_annotations = (new.get("metadata") or {}).get("annotations") or {}
        key = JOB_MIN_PARALLELISM_ANNOTATION
        if old_annotations.get(key) != new_annotations.get(key):
            problems += _min_parallelism_problems(new)
        # Partial admission fixed the parallelism the job was admitted with.
        if key in old_annotations and not is_suspended(old):
            old_par = (old.get("spec") or {}).get("parallelism", 1)
            new_par = (new.get("spec") or {}).get("parallelism", 1)
            if old_par != new_par:
                problems.append(
                    Problem(
                        "spec.parallelism",
                        None,
                        f"cannot change while the job runs with partial admission ({key}); suspend it first",
                    )
                )
        return problems


ADAPTER = BatchJobAdapter()
