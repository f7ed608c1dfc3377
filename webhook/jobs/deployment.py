"""The Deployment integration (Kueue's ``deployment``): a serving workload managed through its pods.

A Deployment is never suspended: its webhook copies the queue (and WorkloadPriorityClass) label into the pod
template, so every pod its ReplicaSets create is a pod of the ``pod`` integration on its own: gated, one Workload
each, admitted individually. Scaling up adds pods that queue; scaling down deletes pods, whose Workloads go with
them (they are owned by the pod), freeing the quota. Needs the ``pod`` integration. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api.views import ObjectLike, ObjectView, PodTemplateView, view_of
from webhook.jobs.adapter import JobKind, Problem


class DeploymentAdapter:
    framework = "deployment"
    kind = JobKind("apps", "v1", "deployments", "Deployment")
    managed_through_pods = True
    pod_owner = True
    children: tuple[JobKind, ...] = ()
    sizes_group = False  # its pods are admitted one by one: no group to size

    def priority_template(self, job: ObjectLike) -> Mapping[str, Any]:
        return PodTemplateView.of(view_of(ObjectView, job).spec.get("template")).spec

    def template_stamp(self, obj: ObjectLike, namespace: str) -> tuple[dict[str, str], dict[str, str]]:
        return {}, {}

    def pod_group(self, obj: ObjectLike, namespace: str) -> str:
        return ""

    def update_problems(self, old: ObjectLike, new: ObjectLike, *, admitted: bool) -> list[Problem]:
        return []  # each pod is admitted on its own: any scale, any template change

    def group_size(self, obj: ObjectLike) -> int:
        return 1


ADAPTER = DeploymentAdapter()
