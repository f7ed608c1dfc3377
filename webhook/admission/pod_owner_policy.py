"""Kinds managed through their pods one by one (Deployment): the webhook only labels their pod template.

A Deployment in a managed namespace that names a queue (or gets the namespace's ``default`` LocalQueue, or is
managed without a queue name) has the queue label, and its WorkloadPriorityClass label when it has one, copied into
``spec.template.metadata.labels`` on create and update: each pod it runs then reaches the pod webhook as a queued
pod (gated, one Workload each). The object itself is never suspended or changed otherwise. Must not: call the API
server.
"""

from __future__ import annotations

from webhook.admission import objects
from webhook.admission.fielderror import FieldError, invalid, key
from webhook.admission.job_policy import namespace_is_managed, owned_by_managed_parent
from webhook.admission.names import dns1123_subdomain
from webhook.admission.options import AdmissionOptions
from webhook.admission.patch import Patch
from webhook.admission.review import Request
from webhook.admission.verdict import ALLOW, Verdict, allow, judge
from webhook.admission.view import ClusterView
from webhook.api import constants as c

QUEUE_PATH = key("metadata.labels", c.QUEUE_NAME_LABEL)
TEMPLATE_LABELS = ("spec", "template", "metadata", "labels")


def mutate(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    obj = request.object
    if request.operation not in ("CREATE", "UPDATE") or obj is None or objects.is_being_deleted(obj):
        return ALLOW
    namespace = request.namespace
    if not namespace_is_managed(namespace, view, options) or owned_by_managed_parent(obj, options):
        return ALLOW
    patch = Patch(obj)
    labels = objects.labels_of(obj)
    queue = labels.get(c.QUEUE_NAME_LABEL, "")
    if not queue and request.operation == "CREATE" and view.has_local_queue(namespace, c.DEFAULT_LOCAL_QUEUE):
        queue = c.DEFAULT_LOCAL_QUEUE
        patch.set_entry(("metadata", "labels"), c.QUEUE_NAME_LABEL, queue)
    if not queue:
        return ALLOW  # the pods decide for themselves (manageJobsWithoutQueueName applies to them)
    patch.set_entry(TEMPLATE_LABELS, c.QUEUE_NAME_LABEL, queue)
    if priority := labels.get(c.PRIORITY_CLASS_LABEL):
        patch.set_entry(TEMPLATE_LABELS, c.PRIORITY_CLASS_LABEL, priority)
    return allow(patch=patch.ops)


def validate(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    obj = request.object
    if obj is None or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    errors: list[FieldError] = []
    queue = objects.labels_of(obj).get(c.QUEUE_NAME_LABEL)
    if queue is not None and (problem := dns1123_subdomain(queue)):
        errors.append(invalid(QUEUE_PATH, queue, problem))
    return judge(errors)
