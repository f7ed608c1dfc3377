"""Plain Pods and pod groups: gate managed pods until admitted; refuse ungating and broken group definitions.

A pod is managed when the ``pod`` integration is on, its namespace is managed (a hard rule for pods, as in
Kueue), its controller owner is not a managed kind (a Job's pods belong to the Job), and it names a queue (or
``manageJobsWithoutQueueName`` is on). A managed pod gets the ``kueue.x-k8s.io/admission`` scheduling gate and
``kueue.x-k8s.io/managed=true``; the reconciler removes the gate when the pod's Workload is admitted.
Must not: call the API server.
"""

from __future__ import annotations

from webhook.admission import names
from webhook.admission.fielderror import FieldError, forbidden, immutable, invalid, key, required
from webhook.admission.job_policy import (
    ANNOTATIONS_MAP,
    LABELS_MAP,
    default_labels,
    namespace_is_managed,
    owned_by_managed_parent,
)
from webhook.admission.options import POD_FRAMEWORK, AdmissionOptions
from webhook.admission.patch import Patch
from webhook.admission.review import Request
from webhook.admission.verdict import ALLOW, Verdict, allow, judge
from webhook.admission.view import ClusterView
from webhook.api import constants as c
from webhook.api.model import KubeObject
from webhook.jobs import naming

GROUP_NAME_PATH = key("metadata.labels", c.POD_GROUP_NAME_LABEL)
TOTAL_COUNT_PATH = key("metadata.annotations", c.POD_GROUP_TOTAL_COUNT_ANNOTATION)
MANAGED_PATH = key("metadata.labels", c.MANAGED_LABEL)
QUEUE_PATH = key("metadata.labels", c.QUEUE_NAME_LABEL)
GATE = {"name": c.ADMISSION_SCHEDULING_GATE}


def group_name(pod: KubeObject) -> str:
    return pod.metadata.labels.get(c.POD_GROUP_NAME_LABEL, "")


def mutate(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    pod, raw = request.object, request.raw_object
    if request.operation != "CREATE" or pod is None or POD_FRAMEWORK not in options.frameworks:
        return ALLOW
    namespace = request.namespace
    if not namespace_is_managed(namespace, view, options) or owned_by_managed_parent(pod, options):
        return ALLOW
    labels = default_labels(pod, namespace, view, options)
    if labels is None:
        return ALLOW
    name, group = pod.metadata.name, group_name(pod)
    workload = naming.pod_workload_name(namespace, name, group) if name or group else None
    patch = Patch(raw)
    patch.set_entries(LABELS_MAP, labels | {c.MANAGED_LABEL: "true"})
    if workload is not None:
        patch.set_entry(ANNOTATIONS_MAP, c.WORKLOAD_NAME_ANNOTATION, workload)
    patch.append_unique(("spec", "schedulingGates"), dict(GATE))
    return allow(patch=patch.ops)


def _metadata_errors(pod: KubeObject) -> list[FieldError]:
    errors: list[FieldError] = []
    labels, annotations = pod.metadata.labels, pod.metadata.annotations
    if c.MANAGED_LABEL in labels and labels[c.MANAGED_LABEL] != "true":
        errors.append(invalid(MANAGED_PATH, labels[c.MANAGED_LABEL], 'the managed label can only be "true"'))
    if c.QUEUE_NAME_LABEL in labels and (problem := names.dns1123_subdomain(labels[c.QUEUE_NAME_LABEL])):
        errors.append(invalid(QUEUE_PATH, labels[c.QUEUE_NAME_LABEL], problem))
    group = labels.get(c.POD_GROUP_NAME_LABEL)
    count = annotations.get(c.POD_GROUP_TOTAL_COUNT_ANNOTATION)
    both = (
        f"a pod group needs both the label {c.POD_GROUP_NAME_LABEL!r} and the annotation "
        f"{c.POD_GROUP_TOTAL_COUNT_ANNOTATION!r}"
    )
    if group is None and count is not None:
        errors.append(required(GROUP_NAME_PATH, both))
    if group is not None:
        if problem := names.dns1123_subdomain(group):
            errors.append(invalid(GROUP_NAME_PATH, group, problem))
        if count is None:
            errors.append(required(TOTAL_COUNT_PATH, both))
    if count is not None:
        text = count.strip()
        if not text.isdigit() or len(text) > 9 or int(text) < 1:
            errors.append(
                invalid(TOTAL_COUNT_PATH, count, "must be a positive whole number: the number of pods in the group")
            )
    return errors


def validate(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    pod = request.object
    if pod is None or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    errors = _metadata_errors(pod)
    old = request.old_object
    if request.operation == "UPDATE" and old is not None:
        errors += _update_errors(request, old, pod, view=view, options=options)
    return judge(errors)


def _update_errors(
    request: Request,
    old: KubeObject,
    new: KubeObject,
    *,
    view: ClusterView,
    options: AdmissionOptions,
) -> list[FieldError]:
    errors: list[FieldError] = []
    old_group, new_group = group_name(old), group_name(new)
    if old_group and new_group != old_group:
        errors.append(immutable(GROUP_NAME_PATH, f"a pod cannot leave or change its group (was {old_group!r})"))
    was_managed = old.metadata.labels.get(c.MANAGED_LABEL) == "true"
    gate = c.ADMISSION_SCHEDULING_GATE
    if was_managed and old.spec.gated(gate) and not new.spec.gated(gate) and not options.is_trusted(request.username):
        name = new.metadata.name or request.name
        workload = naming.pod_workload_name(request.namespace, name, old_group)
        if not view.workload_is_admitted(request.namespace, workload):
            errors.append(
                forbidden(
                    "spec.schedulingGates",
                    f"the {c.ADMISSION_SCHEDULING_GATE!r} gate is removed by Turnstile once Workload "
                    f"{workload!r} is admitted; it is not admitted yet "
                    f"(see: kubectl -n {request.namespace} get workload {workload})",
                )
            )
    old_annotations, new_annotations = old.metadata.annotations, new.metadata.annotations
    retriable = c.RETRIABLE_IN_GROUP_ANNOTATION
    if new_group and old_annotations.get(retriable) == "false" and new_annotations.get(retriable) != "false":
        errors.append(
            forbidden(key("metadata.annotations", retriable), "an unretriable pod group cannot become retriable")
        )
    return errors
