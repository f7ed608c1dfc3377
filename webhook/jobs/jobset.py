"""The JobSet integration (``jobset.x-k8s.io/v1alpha2``, Kueue's ``jobset.x-k8s.io/jobset``).

One pod set per replicated job, named after it, of ``replicas x`` the pods one of its Jobs runs at once
(parallelism, capped by completions), as Kueue counts them. The JobSet is suspended as a whole; admission injects
each pod set's flavors into its replicated job's pod template, and eviction puts the templates back. Finished is
the JobSet's ``Completed`` or ``Failed`` condition; pods are ready when every replicated job's Jobs are ready or
succeeded. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from webhook.api.views import BatchJob, ObjectView, PodTemplateView, Raw, WorkloadRecord, entries, section
from webhook.jobs import suspendable
from webhook.jobs.adapter import Finish, JobKind, Problem
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo
from webhook.jobs.suspendable import TemplateSlot

JSON = dict[str, Any]


class ReplicatedJob(msgspec.Struct, frozen=True):
    """An entry of ``spec.replicatedJobs``: ``replicas`` Jobs made from one Job template."""

    raw: Raw

    @property
    def name(self) -> str:
        return str(self.raw.get("name", ""))

    @property
    def replicas(self) -> int:
        return int(self.raw.get("replicas", 1))

    @property
    def pods_per_replica(self) -> int:
        """The pods one of its Jobs runs at once (its template is a Job's metadata and spec)."""
        return BatchJob.of(section(self.raw, "template")).pod_count


class ReplicatedJobStatus(msgspec.Struct, frozen=True):
    """An entry of ``status.replicatedJobsStatus``: how many of a replicated job's Jobs are in each state."""

    raw: Raw

    def jobs(self, state: str) -> int:
        """Its Jobs ``active``, ``ready`` or ``succeeded``."""
        return int(self.raw.get(state) or 0)


def _replicated_jobs(jobset: ObjectView) -> list[ReplicatedJob]:
    return [ReplicatedJob(r) for r in entries(jobset.spec, "replicatedJobs") if isinstance(r, Mapping)]


def slots(jobset: ObjectView) -> list[TemplateSlot]:
    return [
        TemplateSlot(
            name=r.name,
            path=("spec", "replicatedJobs", i, "template", "spec", "template"),
            count=r.replicas * r.pods_per_replica,
        )
        for i, r in enumerate(_replicated_jobs(jobset))
    ]


def _replicated_job_statuses(jobset: ObjectView) -> list[ReplicatedJobStatus]:
    return [ReplicatedJobStatus(s) for s in entries(jobset.status, "replicatedJobsStatus")]


class JobSetAdapter:
    framework = "jobset.x-k8s.io/jobset"
    kind = JobKind("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
    view = ObjectView
    managed_through_pods = False
    pod_owner = False
    children: tuple[JobKind, ...] = ()

    def pod_sets(self, job: ObjectView, defaults: PodDefaults) -> list[JSON]:
        return suspendable.pod_sets(job, slots(job), defaults)

    def pod_count(self, job: ObjectView) -> int:
        return sum(s.count for s in slots(job))

    def priority_template(self, job: ObjectView) -> PodTemplateView:
        # Kueue: the first replicated job whose pods name a PriorityClass.
        templates = [suspendable.template_at(job, s.path) for s in slots(job)]
        named = (t for t in templates if t.priority_class_name)
        return next(named, templates[0] if templates else PodTemplateView.of(None))

    def is_suspended(self, job: ObjectView) -> bool:
        return suspendable.is_suspended(job)

    def suspended(self, job: ObjectView) -> JSON:
        return suspendable.suspended(job)

    def is_stopping(self, job: ObjectView) -> bool:
        return suspendable.is_stopping(job)

    def template_mutable(self, job: ObjectView) -> bool:
        # JobSet's own webhook lets a suspended JobSet's pod templates change (its controller deletes the Jobs).
        return self.is_suspended(job)

    def has_active_pods(self, job: ObjectView) -> bool:
        return any(s.jobs("active") > 0 for s in _replicated_job_statuses(job))

    def released(self, job: ObjectView, infos: Mapping[str, PodSetInfo], counts: Mapping[str, int]) -> JSON:
        return suspendable.released(job, slots(job), infos)

    def restored(self, job: ObjectView, workload: WorkloadRecord) -> JSON:
        return suspendable.restored(job, slots(job), workload)

    def finished(self, job: ObjectView) -> Finish:
        for condition in entries(job.status, "conditions"):
            if condition.get("status") != "True":
                continue
            if condition.get("type") == "Completed":
                return Finish(True, True, condition.get("message") or "JobSet finished successfully")
            if condition.get("type") == "Failed":
                return Finish(True, False, condition.get("message") or condition.get("reason") or "JobSet failed")
        return Finish(False)

    def pods_ready(self, job: ObjectView) -> bool:
        wanted = sum(r.replicas for r in _replicated_jobs(job))
        ready = sum(s.jobs("ready") + s.jobs("succeeded") for s in _replicated_job_statuses(job))
        return ready >= wanted

    def matches_workload(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> bool:
        return suspendable.matches_workload(job, self.pod_sets(job, defaults), workload)

    def admission_mismatch(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> str | None:
        return suspendable.admission_mismatch(self.pod_sets(job, defaults), workload)

    def shape_changed(self, old: ObjectView, new: ObjectView) -> bool:
        return [r.raw for r in _replicated_jobs(old)] != [r.raw for r in _replicated_jobs(new)]

    def create_problems(self, job: ObjectView, *, managed: bool) -> list[Problem]:
        names = [s.name for s in slots(job)]
        if len(set(names)) != len(names) or "" in names:
            return [Problem("spec.replicatedJobs", ",".join(names), "each replicated job needs its own name")]
        return []

    def update_problems(self, old: ObjectView, new: ObjectView, *, managed: bool) -> list[Problem]:
        return []


ADAPTER = JobSetAdapter()
