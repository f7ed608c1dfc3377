"""The batch/v1 Job integration: a Job becomes a Workload with one PodSet; admission releases it.

Pure transformations of Job and Workload objects. The reconciler decides *when* to call them and writes the
results with optimistic concurrency; nothing here talks to the API server. A Job is read through its typed view
(``webhook.api.views.BatchJob``, a Workload through ``WorkloadRecord``), made once by the caller; a generic
``ObjectView`` is read as a ``BatchJob`` without splitting the object again. ``workload_for`` and ``released``
also take the Job as sent (``ObjectLike``), for callers outside the reconciler. What is written is a copy of the
whole object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api.constants import (
    DEFAULT_PODSET_NAME,
    JOB_MIN_PARALLELISM_ANNOTATION,
    MAX_EXEC_TIME_LABEL,
    STOPPING_ANNOTATION,
)
from webhook.api.copies import writable
from webhook.api.quantity import ZERO, parse_quantity
from webhook.api.resources import pod_requests
from webhook.api.views import AssignedPodSet, BatchJob, ObjectLike, ObjectView, PodTemplateView, WorkloadRecord, view_of
from webhook.api.workload import priority_class_ref_wire
from webhook.jobs.adapter import Finish, JobKind, Problem
from webhook.jobs.naming import job_workload_name
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo, inject, restore
from webhook.jobs.suspendable import adopted, is_stamped, owned_by_controller, owned_workload, queue_name

JSON = dict[str, Any]
# Shared with every suspendable kind; named here too because batch Job callers and tests know them by this module.
__all__ = ["ADAPTER", "adopted", "is_stamped", "owned_by_controller", "queue_name"]

KIND = "Job"
GROUP = "batch"
# Labels the Job controller adds to the template; they identify one Job's pods and must not enter the Workload.
_CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def is_suspended(job: ObjectView) -> bool:
    return view_of(BatchJob, job).suspend


def finished(job: ObjectView) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the Job's Complete/Failed conditions."""
    for condition in view_of(BatchJob, job).conditions:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return True, True, condition.get("message") or "Job finished successfully"
        if condition.get("type") == "Failed":
            return True, False, condition.get("message") or condition.get("reason") or "Job failed"
    return False, False, ""


def pods_ready(job: ObjectView) -> bool:
    """All the pods it runs at once are ready or already succeeded (Kueue's PodsReady for a batch Job).

    Pods that succeeded but that the Job controller has not counted yet (``uncountedTerminatedPods``, between
    its two status writes) count as succeeded: otherwise every Job would look not ready for a moment as it ends.
    """
    view = view_of(BatchJob, job)
    return view.ready + view.succeeded + view.uncounted_succeeded >= view.pod_count


def pod_count(job: ObjectView) -> int:
    """Pods that run at once: parallelism, capped by completions when set (Kueue's PodSet count)."""
    return view_of(BatchJob, job).pod_count


def podsets(job: ObjectView, defaults: PodDefaults | None = None) -> list[JSON]:
    """The Workload's ``spec.podSets`` for this Job: one PodSet named ``main``, its template as the API server
    will admit the pods (``defaults``: the namespace's LimitRange defaults and RuntimeClass overhead)."""
    view = view_of(BatchJob, job)
    template = _admitted_template(view, defaults)
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        for key in _CONTROLLER_UID_LABELS:
            labels.pop(key, None)
    podset: JSON = {"name": DEFAULT_PODSET_NAME, "count": view.pod_count, "template": template}
    min_parallelism = view.annotations.get(JOB_MIN_PARALLELISM_ANNOTATION)
    if min_parallelism is not None:
        podset["minCount"] = int(min_parallelism)
    return [podset]


def _admitted_template(job: BatchJob, defaults: PodDefaults | None) -> JSON:
    """A copy of the Job's pod template as the API server will admit its pods."""
    return (defaults or PodDefaults()).apply(job.template)


def max_execution_time(job: ObjectView) -> int | None:
    value = view_of(BatchJob, job).labels.get(MAX_EXEC_TIME_LABEL)
    return int(value) if value is not None else None


def workload_for(
    job: ObjectLike,
    *,
    priority: int,
    priority_class_name: str | None = None,
    priority_class_source: str = "",
    defaults: PodDefaults | None = None,
) -> JSON:
    """The Workload that represents ``job``, owned by it (a controller owner reference), with Kueue's
    ``resource-in-use`` finalizer: while it holds quota, deleting it must not free the quota before the job
    has stopped (the reconciler removes the finalizer then). ``job``: its view, or the Job as sent, for callers
    outside the reconciler (``turnstile fit``)."""
    view = view_of(BatchJob, job)
    spec: JSON = {"podSets": podsets(view, defaults), "priority": priority}
    if (queue := queue_name(view)) is not None:
        spec["queueName"] = queue
    if priority_class_name and priority_class_source:
        spec["priorityClassRef"] = priority_class_ref_wire(priority_class_source, priority_class_name)
    if (seconds := max_execution_time(view)) is not None:
        spec["maximumExecutionTimeSeconds"] = seconds
    name = job_workload_name(view.namespace, view.name)
    return owned_workload(view, name=name, owner_api_version="batch/v1", owner_kind=KIND, spec=spec)


def matches_workload(job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults | None = None) -> bool:
    """Whether ``workload`` still describes ``job`` (owner, pod count and template of a suspended job)."""
    view, record = view_of(BatchJob, job), workload
    if not record.controlled_by(view.metadata.get("uid")):
        return False
    recorded = record.pod_sets
    expected = podsets(view, defaults)
    if len(recorded) != 1:
        return False
    if recorded[0].count != expected[0]["count"]:
        return False
    # Once released, the template carries injected flavors; compare containers only, which admission never edits.
    return bool(recorded[0].template.containers == PodTemplateView.of(expected[0]["template"]).containers)


def admission_mismatch(job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults | None = None) -> str | None:
    """Why the admitted ``workload`` does not cover ``job`` as it is now, or None when it does.

    Kueue's "no matching Workload" check for an admitted job, on what quota is about: the job may run no more
    pods than its pod set was admitted with, and each pod (as the API server will admit it: LimitRange defaults,
    RuntimeClass overhead, requests from limits) may ask for no more of any resource than the admission charged
    per pod. A job that asks for less keeps running; one that asks for more is stopped and queued again.
    """
    admitted = _admitted_pod_set(workload)
    if admitted is None:
        return f"the Workload has no admission for pod set {DEFAULT_PODSET_NAME!r} alone"
    count, assignment = admitted
    view = view_of(BatchJob, job)
    wanted = view.pod_count
    if wanted > count:
        return f"the job runs {wanted} pods at once; its Workload was admitted for {count}"
    return _pod_excess(PodTemplateView.of(_admitted_template(view, defaults)), assignment, count)


def _admitted_pod_set(workload: WorkloadRecord) -> tuple[int, AssignedPodSet] | None:
    """The pod count the Workload's one pod set was admitted with, and its assignment; None unless its admission
    is for exactly that pod set."""
    spec_sets = {p.name_or(DEFAULT_PODSET_NAME): p for p in workload.pod_sets}
    assignments = workload.assignments
    admitted = next((a for a in assignments if a.name_or(DEFAULT_PODSET_NAME) == DEFAULT_PODSET_NAME), None)
    if admitted is None or len(assignments) != 1 or DEFAULT_PODSET_NAME not in spec_sets:
        return None
    count = admitted.count or int(spec_sets[DEFAULT_PODSET_NAME].count or 0)
    return count, admitted


def _pod_excess(template: PodTemplateView, admitted: AssignedPodSet, count: int) -> str | None:
    """Why a pod of ``template`` asks for more of a resource than ``admitted`` charged per pod of ``count``, or
    None."""
    try:
        per_pod = pod_requests(template.spec)
        charged = {r: parse_quantity(q) for r, q in admitted.resource_usage.items()}
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


def released(job: ObjectLike, infos: Mapping[str, PodSetInfo], *, admitted_count: int | None = None) -> JSON:
    """The Job unsuspended, with the admitted flavors injected into its template (``job``: its view, or the Job as
    sent, for callers outside the reconciler)."""
    view = view_of(BatchJob, job)
    result = writable(view.raw)
    spec = result["spec"]
    info = infos.get(DEFAULT_PODSET_NAME)
    if info is not None:
        spec["template"] = inject(view.template, info)
    if admitted_count is not None and admitted_count < view.pod_count:
        # Partial admission: run only as many pods as were admitted.
        spec["parallelism"] = admitted_count
    spec["suspend"] = False
    annotations = result["metadata"].get("annotations") or {}
    annotations.pop(STOPPING_ANNOTATION, None)
    return result


def suspended(job: ObjectView) -> JSON:
    """Step 1 of stopping: the Job suspended and marked as stopping (its pods are being removed)."""
    result = writable(view_of(BatchJob, job).raw)
    result["spec"]["suspend"] = True
    result["metadata"].setdefault("annotations", {})[STOPPING_ANNOTATION] = "true"
    return result


def is_stopping(job: ObjectView) -> bool:
    """Suspended by ``suspended`` but its template not yet ``restored``."""
    return STOPPING_ANNOTATION in view_of(BatchJob, job).annotations


def template_mutable(job: ObjectView) -> bool:
    """Whether the API server accepts changes to the scheduling directives of the Job's pod template now.

    Only a suspended Job with no active pods that never started, or that the Job controller has marked
    ``Suspended=True`` (Kubernetes 1.36 validation), may change them; before that a restore is refused as
    "field is immutable".
    """
    view = view_of(BatchJob, job)
    if not view.suspend or view.active:
        return False
    if not view.started:
        return True
    return view.has_condition("Suspended")


def restored(job: ObjectView, workload: WorkloadRecord) -> JSON:
    """Step 2 of stopping (after ``status.startTime`` is cleared): the template and parallelism as recorded."""
    result = writable(view_of(BatchJob, job).raw)
    recorded = workload.pod_sets
    if recorded:
        original = recorded[0]
        result["spec"]["template"] = restore(PodTemplateView.of(result["spec"].get("template")), original.template)
        parallelism, count = result["spec"].get("parallelism"), original.count
        if parallelism is not None and count is not None and parallelism < count:
            result["spec"]["parallelism"] = count
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


def _min_parallelism_problems(job: BatchJob) -> list[Problem]:
    raw = job.annotations.get(JOB_MIN_PARALLELISM_ANNOTATION)
    if raw is None:
        return []
    value = _parse_int(str(raw))
    count = job.pod_count
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
    view = BatchJob
    managed_through_pods = False
    pod_owner = False
    children: tuple[JobKind, ...] = ()

    def pod_sets(self, job: ObjectView, defaults: PodDefaults) -> list[JSON]:
        return podsets(job, defaults)

    def pod_count(self, job: ObjectView) -> int:
        return pod_count(job)

    def priority_template(self, job: ObjectView) -> PodTemplateView:
        return view_of(BatchJob, job).template

    def is_suspended(self, job: ObjectView) -> bool:
        return is_suspended(job)

    def suspended(self, job: ObjectView) -> JSON:
        return suspended(job)

    def is_stopping(self, job: ObjectView) -> bool:
        return is_stopping(job)

    def template_mutable(self, job: ObjectView) -> bool:
        return template_mutable(job)

    def has_active_pods(self, job: ObjectView) -> bool:
        return bool(view_of(BatchJob, job).active)

    def released(self, job: ObjectView, infos: Mapping[str, PodSetInfo], counts: Mapping[str, int]) -> JSON:
        return released(job, infos, admitted_count=counts.get(DEFAULT_PODSET_NAME))

    def restored(self, job: ObjectView, workload: WorkloadRecord) -> JSON:
        return restored(job, workload)

    def finished(self, job: ObjectView) -> Finish:
        done, succeeded, message = finished(job)
        return Finish(done, succeeded, message)

    def pods_ready(self, job: ObjectView) -> bool:
        return pods_ready(job)

    def matches_workload(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> bool:
        return matches_workload(job, workload, defaults)

    def admission_mismatch(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> str | None:
        return admission_mismatch(job, workload, defaults)

    def shape_changed(self, old: ObjectView, new: ObjectView) -> bool:
        before, after = view_of(BatchJob, old), view_of(BatchJob, new)
        return before.pod_count != after.pod_count or before.spec.get("template") != after.spec.get("template")

    def create_problems(self, job: ObjectView, *, managed: bool) -> list[Problem]:
        return _min_parallelism_problems(view_of(BatchJob, job))

    def update_problems(self, old: ObjectView, new: ObjectView, *, managed: bool) -> list[Problem]:
        before, after = view_of(BatchJob, old), view_of(BatchJob, new)
        problems: list[Problem] = []
        key = JOB_MIN_PARALLELISM_ANNOTATION
        if before.annotations.get(key) != after.annotations.get(key):
            problems += _min_parallelism_problems(after)
        # Partial admission fixed the parallelism the job was admitted with.
        if (
            key in before.annotations
            and not before.suspend
            and before.spec.get("parallelism", 1) != after.spec.get("parallelism", 1)
        ):
            problems.append(
                Problem(
                    "spec.parallelism",
                    None,
                    f"cannot change while the job runs with partial admission ({key}); suspend it first",
                )
            )
        return problems


ADAPTER = BatchJobAdapter()
