"""The Ray integrations (``ray.io/v1``, KubeRay's CRDs): RayJob (``ray.io/rayjob``) and RayCluster
(``ray.io/raycluster``).

Pod sets as Kueue builds them: ``head`` (one pod), one per worker group named after the group in lower case
(``replicas`` x ``numOfHosts`` pods), and for a RayJob submitted as a Kubernetes Job (``submissionMode``
``K8sJobMode``, the default) a ``submitter`` pod set of one pod (``submitterPodTemplate``, or KubeRay's default
submitter when it has none). Both are suspended as a whole through ``spec.suspend``. Autoscaling is refused
(``enableInTreeAutoscaling``): the autoscaler would change the pod count behind the admission. A RayJob has
finished when KubeRay reports its deployment ``Complete`` or ``Failed``; a RayCluster never finishes (it frees
its quota when deleted). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from webhook.api.copies import writable
from webhook.api.views import ObjectView, PodTemplateView, Raw, WorkloadRecord, entries, section
from webhook.jobs import suspendable
from webhook.jobs.adapter import Finish, JobKind, Problem
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo
from webhook.jobs.suspendable import TemplateSlot

JSON = dict[str, Any]
GROUP, VERSION = "ray.io", "v1"
HEAD, SUBMITTER = "head", "submitter"
K8S_JOB_MODE = "K8sJobMode"
AUTOSCALING_REFUSED = (
    "a job Turnstile manages cannot use Ray's autoscaling: the autoscaler would run more pods than were "
    "admitted; set enableInTreeAutoscaling to false and give each worker group its replicas"
)


class WorkerGroup(msgspec.Struct, frozen=True):
    """An entry of a Ray cluster's ``workerGroupSpecs``."""

    raw: Raw

    @property
    def pod_set_name(self) -> str:
        """Its ``groupName`` in lower case, as Kueue names its pod set."""
        return str(self.raw.get("groupName", "")).lower()

    @property
    def pods(self) -> int:
        """``replicas`` (1 when unset) times ``numOfHosts``."""
        replicas = self.raw.get("replicas")
        count = 1 if replicas is None else int(replicas)
        return count * int(self.raw.get("numOfHosts") or 1)


class RayClusterSpec(msgspec.Struct, frozen=True):
    """A RayCluster's ``spec``, or a RayJob's ``spec.rayClusterSpec``: a head group and worker groups."""

    raw: Raw

    @property
    def head_template(self) -> PodTemplateView:
        return PodTemplateView.of(section(self.raw, "headGroupSpec").get("template"))

    @property
    def worker_groups(self) -> list[WorkerGroup]:
        return [WorkerGroup(g) for g in entries(self.raw, "workerGroupSpecs")]

    @property
    def autoscaling(self) -> bool:
        """``enableInTreeAutoscaling`` is true."""
        return self.raw.get("enableInTreeAutoscaling") is True


def _cluster_slots(cluster: RayClusterSpec, prefix: tuple[str | int, ...]) -> list[TemplateSlot]:
    slots = [TemplateSlot(HEAD, (*prefix, "headGroupSpec", "template"), 1)]
    for i, group in enumerate(cluster.worker_groups):
        slots.append(TemplateSlot(group.pod_set_name, (*prefix, "workerGroupSpecs", i, "template"), group.pods))
    return slots


def _default_submitter(cluster: RayClusterSpec) -> JSON:
    """KubeRay's submitter when the RayJob names none: the head's image, 500m CPU and 200Mi asked for."""
    head = cluster.head_template.spec
    image = ((head.get("containers") or [{}])[0]).get("image", "")
    container = {
        "name": "ray-job-submitter",
        "image": image,
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}},
    }
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def _problems(cluster: RayClusterSpec, where: str, *, reserved: tuple[str, ...]) -> list[Problem]:
    problems: list[Problem] = []
    if cluster.autoscaling:
        problems.append(Problem(f"{where}.enableInTreeAutoscaling", "true", AUTOSCALING_REFUSED))
    names = [g.pod_set_name for g in cluster.worker_groups]
    for name in names:
        if name in reserved or names.count(name) > 1 or not name:
            problems.append(
                Problem(
                    f"{where}.workerGroupSpecs",
                    name,
                    f"each worker group needs its own name, other than {', '.join(repr(r) for r in reserved)} "
                    "(group names become pod set names, in lower case)",
                )
            )
            break
    return problems


class _RayKind:
    """What RayJob and RayCluster share: suspended as a whole, every template released and restored."""

    view = ObjectView
    managed_through_pods = False
    pod_owner = False
    children: tuple[JobKind, ...] = ()

    def slots(self, job: ObjectView) -> list[TemplateSlot]:
        raise NotImplementedError

    def _with_slots(self, job: ObjectView) -> JSON:
        return writable(job.raw)

    def pod_sets(self, job: ObjectView, defaults: PodDefaults) -> list[JSON]:
        pod_sets = suspendable.pod_sets(ObjectView.of(self._with_slots(job)), self.slots(job), defaults)
        return pod_sets

    def pod_count(self, job: ObjectView) -> int:
        return sum(s.count for s in self.slots(job))

    def priority_template(self, job: ObjectView) -> PodTemplateView:
        return suspendable.template_at(job, self.slots(job)[0].path)

    def is_suspended(self, job: ObjectView) -> bool:
        return suspendable.is_suspended(job)

    def suspended(self, job: ObjectView) -> JSON:
        return suspendable.suspended(job)

    def is_stopping(self, job: ObjectView) -> bool:
        return suspendable.is_stopping(job)

    def template_mutable(self, job: ObjectView) -> bool:
        return self.is_suspended(job)  # KubeRay takes template changes of a suspended object

    def released(self, job: ObjectView, infos: Mapping[str, PodSetInfo], counts: Mapping[str, int]) -> JSON:
        return suspendable.released(ObjectView.of(self._with_slots(job)), self.slots(job), infos)

    def restored(self, job: ObjectView, workload: WorkloadRecord) -> JSON:
        return suspendable.restored(job, self.slots(job), workload)

    def matches_workload(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> bool:
        return suspendable.matches_workload(job, self.pod_sets(job, defaults), workload)

    def admission_mismatch(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> str | None:
        return suspendable.admission_mismatch(self.pod_sets(job, defaults), workload)

    def shape_changed(self, old: ObjectView, new: ObjectView) -> bool:
        return self.pod_sets(old, PodDefaults()) != self.pod_sets(new, PodDefaults())

    def update_problems(self, old: ObjectView, new: ObjectView, *, managed: bool) -> list[Problem]:
        return self.create_problems(new, managed=managed)

    def create_problems(self, job: ObjectView, *, managed: bool) -> list[Problem]:
        raise NotImplementedError


class RayJobAdapter(_RayKind):
    framework = "ray.io/rayjob"
    kind = JobKind(GROUP, VERSION, "rayjobs", "RayJob")

    @staticmethod
    def _submits_with_a_job(job: ObjectView) -> bool:
        return (job.spec.get("submissionMode") or K8S_JOB_MODE) == K8S_JOB_MODE

    def slots(self, job: ObjectView) -> list[TemplateSlot]:
        slots = _cluster_slots(RayClusterSpec(section(job.spec, "rayClusterSpec")), ("spec", "rayClusterSpec"))
        if self._submits_with_a_job(job):
            slots.append(TemplateSlot(SUBMITTER, ("spec", "submitterPodTemplate"), 1))
        return slots

    def _with_slots(self, job: ObjectView) -> JSON:
        # The submitter pod set exists even without a submitterPodTemplate (KubeRay then uses its default);
        # releasing it writes that template, with the flavor, into the RayJob.
        result = writable(job.raw)
        spec = result.setdefault("spec", {})
        if self._submits_with_a_job(job) and not spec.get("submitterPodTemplate"):
            spec["submitterPodTemplate"] = _default_submitter(RayClusterSpec(section(spec, "rayClusterSpec")))
        return result

    def has_active_pods(self, job: ObjectView) -> bool:
        status = job.status.get("jobDeploymentStatus") or ""
        return status not in ("", "New", "Suspended", "Complete", "Failed")

    def finished(self, job: ObjectView) -> Finish:
        status = job.status
        deployment = status.get("jobDeploymentStatus")
        if deployment == "Complete":
            return Finish(True, status.get("jobStatus") == "SUCCEEDED", status.get("message") or "RayJob finished")
        if deployment == "Failed":
            return Finish(True, False, status.get("message") or status.get("reason") or "RayJob failed")
        return Finish(False)

    def pods_ready(self, job: ObjectView) -> bool:
        return section(job.status, "rayClusterStatus").get("state") == "ready"

    def create_problems(self, job: ObjectView, *, managed: bool) -> list[Problem]:
        if not managed:
            return []  # an unqueued RayJob is KubeRay's business alone
        spec = job.spec
        problems = _problems(
            RayClusterSpec(section(spec, "rayClusterSpec")), "spec.rayClusterSpec", reserved=(HEAD, SUBMITTER)
        )
        if spec.get("clusterSelector"):
            problems.append(
                Problem(
                    "spec.clusterSelector",
                    str(spec["clusterSelector"]),
                    "a job Turnstile manages cannot run on an existing RayCluster: its quota would not be counted",
                )
            )
        if not spec.get("rayClusterSpec") and not spec.get("clusterSelector"):
            problems.append(Problem("spec.rayClusterSpec", "", "a RayJob Turnstile manages needs its rayClusterSpec"))
        return problems


class RayClusterAdapter(_RayKind):
    framework = "ray.io/raycluster"
    kind = JobKind(GROUP, VERSION, "rayclusters", "RayCluster")

    def slots(self, job: ObjectView) -> list[TemplateSlot]:
        return _cluster_slots(RayClusterSpec(job.spec), ("spec",))

    def has_active_pods(self, job: ObjectView) -> bool:
        status = job.status
        return status.get("state") == "ready" or int(status.get("readyWorkerReplicas") or 0) > 0

    def finished(self, job: ObjectView) -> Finish:
        return Finish(False)  # a RayCluster serves until it is deleted

    def pods_ready(self, job: ObjectView) -> bool:
        return job.status.get("state") == "ready"

    def create_problems(self, job: ObjectView, *, managed: bool) -> list[Problem]:
        return _problems(RayClusterSpec(job.spec), "spec", reserved=(HEAD,)) if managed else []


RAYJOB = RayJobAdapter()
RAYCLUSTER = RayClusterAdapter()
