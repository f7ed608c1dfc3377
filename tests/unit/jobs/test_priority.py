"""A job's priority, resolved as Kueue does, and the pod template each kind names for it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.jobs.builders import make_job
from webhook.api.constants import POD_PRIORITY_CLASS_SOURCE, PRIORITY_CLASS_LABEL, WORKLOAD_PRIORITY_CLASS_SOURCE
from webhook.api.views import BatchJob, ObjectView, Pod, PriorityClass
from webhook.jobs import batch_job, jobset, pod_group, ray
from webhook.jobs.priority import Priority, resolve

JSON = dict[str, Any]


def priority_class(
    name: str, value: int | None, *, default: bool = False, kind: str = "PriorityClass"
) -> PriorityClass:
    obj: JSON = {"kind": kind, "metadata": {"name": name}}
    if value is not None:
        obj["value"] = value
    if default:
        obj["globalDefault"] = True
    return PriorityClass.of(obj)


WPCS = {"urgent": priority_class("urgent", 1000, kind="WorkloadPriorityClass")}
CLASSES = [priority_class("high", 100), priority_class("low", -5, default=True), priority_class("mid", 7, default=True)]


def job_with(*, workload_class: str | None = None, pod_class: str | None = None) -> BatchJob:
    job = make_job(labels={PRIORITY_CLASS_LABEL: workload_class} if workload_class else None)
    if pod_class:
        job["spec"]["template"]["spec"]["priorityClassName"] = pod_class
    return BatchJob.of(job)


@pytest.mark.parametrize(
    ("job", "classes", "expected"),
    [
        pytest.param(
            job_with(workload_class="urgent", pod_class="high"),
            CLASSES,
            Priority(1000, "urgent", WORKLOAD_PRIORITY_CLASS_SOURCE),
            id="workload-class-first",
        ),
        pytest.param(
            job_with(workload_class="missing", pod_class="high"),
            CLASSES,
            Priority(100, "high", POD_PRIORITY_CLASS_SOURCE),
            id="missing-workload-class-falls-to-the-pod-class",
        ),
        pytest.param(
            job_with(pod_class="missing"),
            CLASSES,
            Priority(-5, "low", POD_PRIORITY_CLASS_SOURCE),
            id="missing-pod-class-falls-to-the-lowest-default",
        ),
        pytest.param(job_with(), CLASSES, Priority(-5, "low", POD_PRIORITY_CLASS_SOURCE), id="default-class"),
        pytest.param(job_with(pod_class="high"), [], Priority(0), id="no-class-is-zero"),
        pytest.param(
            job_with(pod_class="novalue"),
            [priority_class("novalue", None)],
            Priority(0, "novalue", POD_PRIORITY_CLASS_SOURCE),
            id="a-class-without-value-is-zero",
        ),
    ],
)
def test_resolve_follows_kueues_order(job: BatchJob, classes: list[PriorityClass], expected: Priority) -> None:
    assert resolve(job, workload_priority_classes=WPCS, priority_classes=classes) == expected


def test_resolve_reads_the_template_it_is_given_over_the_jobs_own() -> None:
    other = job_with(pod_class="high").template
    resolved = resolve(job_with(), workload_priority_classes={}, priority_classes=CLASSES[:1], template=other)
    assert resolved == Priority(100, "high", POD_PRIORITY_CLASS_SOURCE)


def _pod_spec(priority_class_name: str | None = None) -> JSON:
    spec: JSON = {"containers": [{"name": "c"}]}
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    return spec


def test_each_kind_names_the_template_whose_class_counts() -> None:
    job = make_job()
    job["spec"]["template"]["spec"]["priorityClassName"] = "high"
    assert batch_job.ADAPTER.priority_template(BatchJob.of(job)).priority_class_name == "high"
    # A JobSet: the first replicated job whose pods name a class; the first one when none does.
    replicated = [
        {"name": n, "template": {"spec": {"template": {"spec": _pod_spec(c)}}}} for n, c in (("a", None), ("b", "mid"))
    ]
    js = ObjectView.of({"metadata": {"name": "js"}, "spec": {"replicatedJobs": replicated}})
    assert jobset.ADAPTER.priority_template(js).priority_class_name == "mid"
    replicated[1]["template"]["spec"]["template"]["spec"].pop("priorityClassName")
    assert jobset.ADAPTER.priority_template(ObjectView.of(js.raw)).spec == _pod_spec()
    # Ray: the head's template; a pod: its own spec.
    cluster = {"headGroupSpec": {"template": {"spec": _pod_spec("high")}}, "workerGroupSpecs": []}
    rj = ObjectView.of({"metadata": {"name": "rj"}, "spec": {"rayClusterSpec": cluster}})
    assert ray.RAYJOB.priority_template(rj).priority_class_name == "high"
    pod = Pod.of({"metadata": {"name": "p"}, "spec": _pod_spec("low")})
    assert pod_group.ADAPTER.priority_template(pod).priority_class_name == "low"


def test_a_template_that_is_not_an_object_names_no_class() -> None:
    cluster = {"headGroupSpec": {"template": ["not", "an", "object"]}, "workerGroupSpecs": []}
    rj = ObjectView.of({"metadata": {"name": "rj"}, "spec": {"rayClusterSpec": cluster}})
    assert ray.RAYJOB.priority_template(rj).priority_class_name is None
