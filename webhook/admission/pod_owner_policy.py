"""Kinds managed through the pods their controller creates (Deployment, StatefulSet): the webhook only stamps
their pod template.

An object in a managed namespace that names a queue (or gets the namespace's ``default`` LocalQueue, or is
managed without a queue name) has the queue label, its WorkloadPriorityClass label when it has one, and what its
kind adds (a StatefulSet's pod group) copied into ``spec.template.metadata`` on create and update: each pod it runs
then reaches the pod webhook as a queued pod (gated, admitted alone or with its group). The object itself is never
suspended. Updates of a queued object are held to its kind's rules (``PodOwnerAdapter.update_problems``).
Must not: call the API server.
"""

from __future__ import annotations

from webhook.admission.fielderror import FieldError, forbidden, invalid, key
from webhook.admission.job_policy import namespace_is_managed, owned_by_managed_parent
from webhook.admission.names import dns1123_subdomain
from webhook.admission.options import AdmissionOptions
from webhook.admission.patch import Patch
from webhook.admission.review import Request
from webhook.admission.verdict import ALLOW, Verdict, allow, judge
from webhook.admission.view import ClusterView
from webhook.api import constants as c
from webhook.api.model import KubeObject
from webhook.jobs.adapter import PodOwnerAdapter

QUEUE_PATH = key("metadata.labels", c.QUEUE_NAME_LABEL)
TEMPLATE_LABELS = ("spec", "template", "metadata", "labels")
TEMPLATE_ANNOTATIONS = ("spec", "template", "metadata", "annotations")


class PodOwnerPolicy:
    def __init__(self, adapter: PodOwnerAdapter) -> None:
        self._adapter = adapter

    def _queued(self, obj: KubeObject, namespace: str, view: ClusterView, options: AdmissionOptions) -> bool:
        if not namespace_is_managed(namespace, view, options) or owned_by_managed_parent(obj, options):
            return False
        return bool(obj.metadata.labels.get(c.QUEUE_NAME_LABEL)) or options.manage_jobs_without_queue_name

    def mutate(self, request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
        obj, seen = request.object, request.view
        if request.operation not in ("CREATE", "UPDATE") or obj is None or obj.metadata.deletion_timestamp is not None:
            return ALLOW
        namespace = request.namespace
        if not namespace_is_managed(namespace, view, options) or owned_by_managed_parent(obj, options):
            return ALLOW
        patch = Patch(request.raw_object)
        labels = obj.metadata.labels
        queue = labels.get(c.QUEUE_NAME_LABEL, "")
        if not queue and request.operation == "CREATE" and view.has_local_queue(namespace, c.DEFAULT_LOCAL_QUEUE):
            queue = c.DEFAULT_LOCAL_QUEUE
            patch.set_entry(("metadata", "labels"), c.QUEUE_NAME_LABEL, queue)
        if not queue and not options.manage_jobs_without_queue_name:
            return ALLOW  # the pods decide for themselves (a Deployment's: manageJobsWithoutQueueName applies)
        if queue:
            patch.set_entry(TEMPLATE_LABELS, c.QUEUE_NAME_LABEL, queue)
        if priority := labels.get(c.PRIORITY_CLASS_LABEL):
            patch.set_entry(TEMPLATE_LABELS, c.PRIORITY_CLASS_LABEL, priority)
        extra_labels, extra_annotations = self._adapter.template_stamp(seen, namespace)
        for name, value in extra_labels.items():
            patch.set_entry(TEMPLATE_LABELS, name, value)
        for name, value in extra_annotations.items():
            patch.set_entry(TEMPLATE_ANNOTATIONS, name, value)
        return allow(patch=patch.ops)

    def validate(self, request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
        obj, seen = request.object, request.view
        if obj is None or request.operation not in ("CREATE", "UPDATE"):
            return ALLOW
        errors: list[FieldError] = []
        queue = obj.metadata.labels.get(c.QUEUE_NAME_LABEL)
        if queue is not None and (problem := dns1123_subdomain(queue)):
            errors.append(invalid(QUEUE_PATH, queue, problem))
        old = request.old_object
        if request.operation == "UPDATE" and old is not None and self._queued(old, request.namespace, view, options):
            group = self._adapter.pod_group(seen, request.namespace)
            admitted = bool(group) and view.workload_is_admitted(request.namespace, group)
            for wrong in self._adapter.update_problems(request.old_view, seen, admitted=admitted):
                if wrong.value is None:
                    errors.append(forbidden(wrong.path, wrong.message))
                else:
                    errors.append(invalid(wrong.path, wrong.value, wrong.message))
        return judge(errors)
