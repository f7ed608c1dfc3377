"""The Deployment integration (Kueue's ``deployment``): a serving workload managed through its pods.

A Deployment is never suspended: its webhook copies the queue (and WorkloadPriorityClass) label into the pod
template, so every pod its ReplicaSets create is a pod of the ``pod`` integration on its own: gated, one Workload
each, admitted individually. Scaling up adds pods that queue; scaling down deletes pods, whose Workloads go with
them (they are owned by the pod), freeing the quota. Needs the ``pod`` integration. Pure.
"""

from __future__ import annotations

from webhook.api.views import ObjectView, PodTemplateView
from webhook.jobs.adapter import JobKind, Problem


class DeploymentAdapter:
    framework = "deployment"
    kind = JobKind("apps", "v1", "deployments", "Deployment")
    view = ObjectView
    managed_through_pods = True
    pod_owner = True
    children: tuple[JobKind, ...] = ()
    sizes_group = False  # its pods are admitted one by one: no group to size

    def priority_template(self, job: ObjectView) -> PodTemplateView:
        return PodTemplateView.of(job.spec.get("template"))

    def template_stamp(self, obj: ObjectView, namespace: str) -> tuple[dict[str, str], dict[str, str]]:
        return {}, {}

    def pod_group(self, obj: ObjectView, namespace: str) -> str:
        return ""

    def update_problems(self, old: ObjectView, new: ObjectView, *, admitted: bool) -> list[Problem]:
        return []  # each pod is admitted on its own: any scale, any template change

    def group_size(self, obj: ObjectView) -> int:
        return 1


ADAPTER = DeploymentAdapter()
