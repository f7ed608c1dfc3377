"""The rules every job kind suspended as a whole shares, written once: the mutating policy (queue and priority
defaults, the Workload stamp, suspend) and the validating policy (no escapes: unsuspend only when admitted, the
queue fixed while admitted, no resize beyond the admission). ``JobPolicy(adapter)`` serves one kind; what only a
kind knows (its pod count and templates, partial admission, ...) comes from its adapter. ``mutate`` and
``validate`` are batch/v1 Job's.

A job is managed when its namespace is managed, its controller owner is not itself a managed kind, and it names
a queue (or ``manageJobsWithoutQueueName`` is on). Unmanaged jobs are never changed. Mutation only emits the
differences from what the object already holds, so reinvocation yields an empty patch and ``dryRun`` requests
get the same answer as real ones (the policy has no side effects to skip). The rules read the typed object
(``request.object``: labels, annotations, owner); the adapter reads its view (``request.view``), the patch the
object as sent.
Must not: call the API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from webhook.admission import names
from webhook.admission.fielderror import (
    FieldError,
    forbidden,
    immutable,
    invalid,
    key,
)
from webhook.admission.options import AdmissionOptions
from webhook.admission.patch import Patch
from webhook.admission.review import Request
from webhook.admission.verdict import ALLOW, Verdict, allow, judge
from webhook.admission.view import ClusterView
from webhook.api import constants as c
from webhook.api.model import KubeObject
from webhook.api.views import ObjectView
from webhook.jobs import batch_job, naming
from webhook.jobs.adapter import Problem, SuspendableAdapter

LABELS = "metadata.labels"
ANNOTATIONS = "metadata.annotations"
QUEUE_PATH = key(LABELS, c.QUEUE_NAME_LABEL)
PRIORITY_PATH = key(LABELS, c.PRIORITY_CLASS_LABEL)
MAX_EXEC_PATH = key(LABELS, c.MAX_EXEC_TIME_LABEL)
PREBUILT_PATH = key(LABELS, c.PREBUILT_WORKLOAD_LABEL)
STAMP_PATH = key(ANNOTATIONS, c.WORKLOAD_NAME_ANNOTATION)
LABELS_MAP = ("metadata", "labels")
ANNOTATIONS_MAP = ("metadata", "annotations")


def queue_name(job: KubeObject) -> str:
    return job.metadata.labels.get(c.QUEUE_NAME_LABEL, "")


def owned_by_managed_parent(obj: KubeObject, options: AdmissionOptions) -> bool:
    owner = obj.metadata.controller_owner()
    return owner is not None and options.manages_kind(owner.group, owner.kind)


def default_labels(
    obj: KubeObject, namespace: str, view: ClusterView, options: AdmissionOptions
) -> dict[str, str] | None:
    """The label defaults every managed kind gets on creation (label -> value, to set); None when the object is
    not queued at all.

    The queue defaults to the namespace's LocalQueue "default" when there is one; without a queue the object is
    managed only under ``manageJobsWithoutQueueName``. The priority class defaults to the WorkloadPriorityClass
    "default" when it exists.
    """
    labels, defaults = obj.metadata.labels, {}
    queue = labels.get(c.QUEUE_NAME_LABEL, "")
    if not queue and view.has_local_queue(namespace, c.DEFAULT_LOCAL_QUEUE):
        queue = defaults[c.QUEUE_NAME_LABEL] = c.DEFAULT_LOCAL_QUEUE
    if not queue and not options.manage_jobs_without_queue_name:
        return None
    if c.PRIORITY_CLASS_LABEL not in labels and view.has_workload_priority_class(c.DEFAULT_PRIORITY_CLASS):
        defaults[c.PRIORITY_CLASS_LABEL] = c.DEFAULT_PRIORITY_CLASS
    return defaults


def namespace_is_managed(namespace: str, view: ClusterView, options: AdmissionOptions) -> bool:
    return options.namespaces.is_managed(namespace, view.namespace_labels(namespace))


def is_managed(job: KubeObject, namespace: str, *, view: ClusterView, options: AdmissionOptions) -> bool:
    if not namespace_is_managed(namespace, view, options) or owned_by_managed_parent(job, options):
        return False
    return bool(queue_name(job)) or options.manage_jobs_without_queue_name


def _field_error(problem: Problem) -> FieldError:
    if problem.value is None:
        return forbidden(problem.path, problem.message)
    return invalid(problem.path, problem.value, problem.message)


def _label_errors(job: KubeObject) -> list[FieldError]:
    errors: list[FieldError] = []
    labels = job.metadata.labels
    for label, path in ((c.QUEUE_NAME_LABEL, QUEUE_PATH), (c.PREBUILT_WORKLOAD_LABEL, PREBUILT_PATH)):
        if label in labels and (problem := names.dns1123_subdomain(labels[label])):
            errors.append(invalid(path, labels[label], problem))
    if c.MAX_EXEC_TIME_LABEL in labels:
        raw = labels[c.MAX_EXEC_TIME_LABEL]
        seconds = _parse_int(raw)
        if seconds is None:
            errors.append(invalid(MAX_EXEC_PATH, raw, 'must be a whole number of seconds, e.g. "3600"'))
        elif seconds <= 0:
            errors.append(invalid(MAX_EXEC_PATH, raw, "must be greater than 0"))
    return errors


def _parse_int(raw: str) -> int | None:
    text = raw.strip()
    if not text or len(text) > 12 or not text.lstrip("+-").isdigit():
        return None
    return int(text)


class JobPolicy:
    """The shared job rules for one kind."""

    def __init__(self, adapter: SuspendableAdapter) -> None:
        self._adapter = adapter

    def workload_name(self, namespace: str, name: str, job: KubeObject | None = None) -> str:
        """The Workload of ``job``: the prebuilt one it names (``kueue.x-k8s.io/prebuilt-workload-name``) or ours."""
        prebuilt = job.metadata.labels.get(c.PREBUILT_WORKLOAD_LABEL) if job is not None else None
        if prebuilt:
            return prebuilt
        kind = self._adapter.kind
        return naming.workload_name(kind=kind.kind, group=kind.group, namespace=namespace, name=name)

    # Mutating ---------------------------------------------------------------------------------------------

    def mutate(self, request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
        job = request.object
        if request.operation != "CREATE" or job is None or job.metadata.deletion_timestamp is not None:
            return ALLOW
        namespace = request.namespace
        if not namespace_is_managed(namespace, view, options) or owned_by_managed_parent(job, options):
            return ALLOW
        # 1-2. The queue and priority class defaults.
        labels = default_labels(job, namespace, view, options)
        if labels is None:
            return ALLOW
        # 3. The Workload's name, stamped so the link is visible before the reconciler creates it.
        name = job.metadata.name
        workload = self.workload_name(namespace, name, job) if name else None
        # 4. The patch, written once everything is decided: the defaults, the stamp, and suspend (the kind's
        # controller must not create a pod before the queue admits the job).
        patch = Patch(request.raw_object)
        patch.set_entries(LABELS_MAP, labels)
        if workload is not None:
            patch.set_entry(ANNOTATIONS_MAP, c.WORKLOAD_NAME_ANNOTATION, workload)
        patch.set_field(("spec", "suspend"), True)
        return allow(patch=patch.ops)

    # Validating -------------------------------------------------------------------------------------------

    def validate(self, request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
        job, seen = request.object, request.view
        if job is None or request.operation not in ("CREATE", "UPDATE"):
            return ALLOW
        errors = _label_errors(job)
        managed = is_managed(job, request.namespace, view=view, options=options)
        old = request.old_object
        if request.operation == "CREATE" or old is None:
            errors += [_field_error(p) for p in self._adapter.create_problems(seen, managed=managed)]
            return judge(errors)
        errors += [_field_error(p) for p in self._adapter.update_problems(request.old_view, seen, managed=managed)]
        change = _Update.of(
            self._adapter, request, _Side(old, request.old_view), _Side(job, seen), view=view, options=options
        )
        errors += self._update_errors(request, change, view=view, options=options)
        return judge(errors)

    def _update_errors(
        self, request: Request, change: _Update, *, view: ClusterView, options: AdmissionOptions
    ) -> list[FieldError]:
        errors = self._run_errors(request, change, view=view, options=options)
        errors += self._queue_errors(change)
        if change.managed:
            errors += _managed_label_errors(request, change, options)
        return errors

    def _run_errors(
        self, request: Request, change: _Update, *, view: ClusterView, options: AdmissionOptions
    ) -> list[FieldError]:
        """1. The main escape: a managed job may run only once its Workload is admitted, and only as admitted."""
        if not change.managed or change.suspended_after:
            return []
        if change.suspended_before:
            return self._unsuspend_errors(request, change.new, view=view, options=options)
        if self._adapter.shape_changed(change.old.view, change.new.view):
            return self._admission_errors(request, change.new, view=view, options=options)
        return []

    def _queue_errors(self, change: _Update) -> list[FieldError]:
        errors: list[FieldError] = []
        old_queue, new_queue = change.old_queue, change.new_queue
        # 2. The queue of a running job is fixed: quota was reserved in that queue.
        if not change.suspended_after and new_queue != old_queue and (old_queue or change.now_managed):
            errors.append(
                immutable(
                    QUEUE_PATH,
                    f"the queue name cannot change while the job runs (was {old_queue or '<none>'!r}, "
                    f"now {new_queue or '<none>'!r}); suspend the job first",
                )
            )
        # 2b. So is the prebuilt Workload it names: quota was reserved for that Workload.
        if not change.suspended_after and change.managed and change.label_changed(c.PREBUILT_WORKLOAD_LABEL):
            errors.append(immutable(PREBUILT_PATH, "cannot change while the job runs; suspend the job first"))
        # 3. The queue label ties a queued job to its Workload: removing it would let the job run outside every
        #    quota (once unsuspended, nothing would queue it). Only a finished job may lose it.
        if old_queue and not new_queue and change.was_managed and not self._adapter.finished(change.old.view).done:
            errors.append(
                invalid(
                    QUEUE_PATH,
                    "",
                    f"the queue name cannot be removed from a job Turnstile manages (it was {old_queue!r}); "
                    "name another queue instead, or delete the job",
                )
            )
        return errors

    def _unsuspend_errors(
        self, request: Request, job: _Side, *, view: ClusterView, options: AdmissionOptions
    ) -> list[FieldError]:
        if options.is_trusted(request.username):
            return []
        name = job.typed.metadata.name or request.name
        workload = self.workload_name(request.namespace, name, job.typed)
        if view.workload_is_admitted(request.namespace, workload):
            return self._admission_errors(request, job, view=view, options=options)
        queue = queue_name(job.typed) or "<none>"
        return [
            forbidden(
                "spec.suspend",
                f"job {name!r} is queued by Turnstile in LocalQueue {queue!r} and its Workload {workload!r} is not "
                "admitted yet; it starts on its own once the queue has quota for all of its pods "
                f"(see: kubectl -n {request.namespace} get workload {workload})",
            )
        ]

    def _admission_errors(
        self, request: Request, job: _Side, *, view: ClusterView, options: AdmissionOptions
    ) -> list[FieldError]:
        """A job that runs must fit its admitted Workload: no more pods, no bigger pods (LimitRange defaults and
        RuntimeClass overhead included), or it would run beyond its quota until the reconciler stopped it."""
        if options.is_trusted(request.username):
            return []
        name = job.typed.metadata.name or request.name
        workload_name = self.workload_name(request.namespace, name, job.typed)
        if not view.workload_is_admitted(request.namespace, workload_name):
            # Reached for a running job whose pods change (an unsuspend gets here only once admitted). Its
            # admission is not in our view: the view may be a moment behind the API server (seen under load), or
            # the Workload was just evicted. Either way nothing bounds the new pods: refuse, fail closed.
            if self._adapter.finished(job.view).done:
                return []
            return [
                forbidden(
                    "spec",
                    f"job {name!r} runs, but Turnstile cannot confirm that its Workload {workload_name!r} is "
                    "admitted (its view of the cluster may be a moment behind); change its pods again shortly, "
                    "or suspend the job first",
                )
            ]
        workload = view.workload(request.namespace, workload_name)
        if workload is None:
            return []  # admitted, but its body is not in the view: nothing to compare with
        mismatch = self._adapter.admission_mismatch(job.view, workload, view.pod_defaults(request.namespace))
        if mismatch is None:
            return []
        return [
            forbidden(
                "spec",
                f"job {name!r} would run beyond the quota its Workload {workload_name!r} was admitted with: "
                f"{mismatch}; suspend the job first (it is then queued again with its new shape)",
            )
        ]


_BATCH_JOB = JobPolicy(batch_job.ADAPTER)
mutate = _BATCH_JOB.mutate
validate = _BATCH_JOB.validate


@dataclass(frozen=True, slots=True)
class _Side:
    """One side of an update: the job typed, for the shared rules, and its view, for its kind's adapter."""

    typed: KubeObject
    view: ObjectView


@dataclass(frozen=True, slots=True)
class _Update:
    """What an update of a job changes, as the update rules read it."""

    old: _Side
    new: _Side
    was_managed: bool
    now_managed: bool
    old_queue: str
    new_queue: str
    suspended_before: bool
    suspended_after: bool
    old_labels: Mapping[str, str]
    new_labels: Mapping[str, str]

    @classmethod
    def of(
        cls,
        adapter: SuspendableAdapter,
        request: Request,
        old: _Side,
        new: _Side,
        *,
        view: ClusterView,
        options: AdmissionOptions,
    ) -> _Update:
        return cls(
            old=old,
            new=new,
            was_managed=is_managed(old.typed, request.namespace, view=view, options=options),
            now_managed=is_managed(new.typed, request.namespace, view=view, options=options),
            old_queue=queue_name(old.typed),
            new_queue=queue_name(new.typed),
            suspended_before=adapter.is_suspended(old.view),
            suspended_after=adapter.is_suspended(new.view),
            old_labels=old.typed.metadata.labels,
            new_labels=new.typed.metadata.labels,
        )

    @property
    def managed(self) -> bool:
        """Managed before or after: either way the update rules of a managed job apply."""
        return self.was_managed or self.now_managed

    def label_changed(self, key: str) -> bool:
        return self.old_labels.get(key) != self.new_labels.get(key)


def _managed_label_errors(request: Request, change: _Update, options: AdmissionOptions) -> list[FieldError]:
    errors: list[FieldError] = []
    # 4. The execution-time limit is part of the Workload; it may change only while suspended.
    if not (change.suspended_before and change.suspended_after) and change.label_changed(c.MAX_EXEC_TIME_LABEL):
        errors.append(immutable(MAX_EXEC_PATH, "cannot change while the job runs; suspend it first"))
    # 5. Priority class: never removed; not added to a running job.
    old_priority = change.old_labels.get(c.PRIORITY_CLASS_LABEL, "")
    new_priority = change.new_labels.get(c.PRIORITY_CLASS_LABEL, "")
    if old_priority and not new_priority:
        errors.append(invalid(PRIORITY_PATH, "", "the WorkloadPriorityClass label cannot be removed from a job"))
    elif not old_priority and new_priority and not change.suspended_after:
        errors.append(invalid(PRIORITY_PATH, new_priority, "a WorkloadPriorityClass cannot be added to a running job"))
    # 6. The Workload stamp links the job to its Workload; it is not the user's to edit.
    old_stamp = change.old.typed.metadata.annotations.get(c.WORKLOAD_NAME_ANNOTATION)
    new_stamp = change.new.typed.metadata.annotations.get(c.WORKLOAD_NAME_ANNOTATION)
    if old_stamp is not None and new_stamp != old_stamp and not options.is_trusted(request.username):
        errors.append(immutable(STAMP_PATH, "is set by Turnstile and cannot be changed or removed"))
    return errors
