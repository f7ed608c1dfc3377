"""The StatefulSet integration (Kueue's ``statefulset``): a serving workload whose pods form one pod group.

A StatefulSet is never suspended: its webhook stamps the pod template so every pod the StatefulSet controller
creates joins one pod group of the ``pod`` integration, named after the StatefulSet, sized by ``spec.replicas``,
with fast admission (the group's Workload is created with its first pod, for all ``replicas`` pods at once: with
the default ``OrderedReady`` pod management, pod-1 is only created once pod-0 runs) and marked as serving. As in
Kueue, an update of the object changes ``replicas`` only to zero (the pods go, and with them the Workload and its
quota) and back up from zero (the new pods queue as a new group); the containers' shape is fixed while managed, and
the queue is fixed once the group is admitted or a pod is ready. ``kubectl scale`` goes through the /scale
subresource, which no webhook of the StatefulSet sees: so StatefulSets are watched and the group's size is the live
``spec.replicas`` (``group_size``), not the count stamped in the template, which is only the size it had when last
stamped (at least 1, which the pod webhook requires). A StatefulSet without a name yet (``generateName``) is not
grouped: its pods are admitted one by one. Needs the ``pod`` integration. Pure.
"""

from __future__ import annotations

from typing import Any

from webhook.api import constants as c
from webhook.api.views import ObjectView, Pod, PodTemplateView
from webhook.jobs.adapter import JobKind, Problem
from webhook.jobs.naming import MAX_LABEL_VALUE_LENGTH, workload_name
from webhook.jobs.pod_group import role_hash

JSON = dict[str, Any]
QUEUE_PATH = f"metadata.labels[{c.QUEUE_NAME_LABEL}]"


def group_name(namespace: str, name: str) -> str:
    """The pod group (and Workload) of a StatefulSet's pods; short enough to be a label value."""
    return workload_name(kind="StatefulSet", group="apps", namespace=namespace, name=name, limit=MAX_LABEL_VALUE_LENGTH)


def _template(obj: ObjectView) -> PodTemplateView:
    return PodTemplateView.of(obj.spec.get("template"))


def replicas(obj: ObjectView) -> int:
    value = obj.spec.get("replicas")
    return 1 if value is None else int(value)


def _queue(obj: ObjectView) -> str:
    return str(obj.labels.get(c.QUEUE_NAME_LABEL, ""))


def _status(obj: ObjectView, field: str) -> int:
    return int(obj.status.get(field) or 0)


def _shape(obj: ObjectView) -> str:
    return role_hash(Pod.of({"spec": _template(obj).spec}))


class StatefulSetAdapter:
    framework = "statefulset"
    kind = JobKind("apps", "v1", "statefulsets", "StatefulSet")
    view = ObjectView
    managed_through_pods = True
    pod_owner = True
    children: tuple[JobKind, ...] = ()
    sizes_group = True

    def group_size(self, obj: ObjectView) -> int:
        return replicas(obj)

    def priority_template(self, job: ObjectView) -> PodTemplateView:
        return _template(job)

    def pod_group(self, obj: ObjectView, namespace: str) -> str:
        name = obj.metadata.get("name") or ""
        return group_name(namespace, name) if name else ""

    def template_stamp(self, obj: ObjectView, namespace: str) -> tuple[dict[str, str], dict[str, str]]:
        group = self.pod_group(obj, namespace)
        if not group:
            return {}, {}
        annotations = {c.POD_GROUP_FAST_ADMISSION_ANNOTATION: "true", c.POD_GROUP_SERVING_ANNOTATION: "true"}
        # Scaled to zero, the group keeps the size it had (a size of 0 would have every pod refused by the pod
        # webhook); created with zero, it says 1. The reconciler sizes the group from the live StatefulSet.
        if count := replicas(obj):
            annotations[c.POD_GROUP_TOTAL_COUNT_ANNOTATION] = str(count)
        elif c.POD_GROUP_TOTAL_COUNT_ANNOTATION not in _template(obj).annotations:
            annotations[c.POD_GROUP_TOTAL_COUNT_ANNOTATION] = "1"
        return {c.POD_GROUP_NAME_LABEL: group}, annotations

    def update_problems(self, old: ObjectView, new: ObjectView, *, admitted: bool) -> list[Problem]:
        problems: list[Problem] = []
        old_queue, new_queue = _queue(old), _queue(new)
        if old_queue != new_queue and (admitted or _status(old, "readyReplicas") > 0 or not new_queue):
            why = "its pods are admitted" if admitted or _status(old, "readyReplicas") else "it cannot be removed"
            problems.append(Problem(QUEUE_PATH, None, f"field is immutable: {why} (was {old_queue!r})"))
        if _shape(old) != _shape(new):
            problems.append(
                Problem(
                    "spec.template.spec",
                    None,
                    "the containers (images, resources) cannot change while Turnstile manages the StatefulSet's "
                    "pods: its pod group was admitted for them",
                )
            )
        before, after = replicas(old), replicas(new)
        if before != after and before and after:
            problems.append(
                Problem(
                    "spec.replicas",
                    None,
                    f"field is immutable: a queued StatefulSet scales only to 0 and back up from 0 (was {before})",
                )
            )
        if before == 0 and after > 0 and _status(new, "replicas") > 0:
            problems.append(Problem("spec.replicas", None, "scaling down is still in progress"))
        return problems


ADAPTER = StatefulSetAdapter()
