"""The read-only views of raw objects: sections read as the dict code read them, the object itself untouched; the
Job's counts and states, the Pod's gates, phase, readiness and deletion, the Workload's pod sets and assignments."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.jobs.builders import make_job
from webhook.api.views import BatchJob, ConfigMap, ObjectView, Pod, PodTemplateView, WorkloadRecord, view_of


def test_sections_missing_null_or_falsy_read_as_empty() -> None:
    view = ObjectView.of({"metadata": None, "spec": "", "status": {}})  # as ``x.get(key) or {}`` read them
    assert (view.metadata, view.spec, view.status) == ({}, {}, {})
    assert (dict(view.labels), dict(view.annotations), list(view.owner_references)) == ({}, {}, [])


def test_an_empty_section_is_a_new_dict_each_time() -> None:
    raw: dict[str, Any] = {}
    view = ObjectView.of(raw)
    labels = view.labels
    assert type(labels) is dict, "sections are copied and serialized like the object's own"
    labels["x"] = "y"  # type: ignore[index]
    assert (view.labels, raw) == ({}, {})


def test_metadata_by_name() -> None:
    view = ObjectView.of(make_job(labels={"empty": ""}, annotations={"a": "1"}))
    assert (view.name, view.namespace, view.uid) == ("sample", "team-a", "uid-1")
    assert view.label("kueue.x-k8s.io/queue-name") == "user-queue"
    assert view.label("empty") is None, "an empty label is no label"
    assert view.label("missing") is None
    assert view.annotations == {"a": "1"}


def test_a_missing_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        _ = ObjectView.of({"metadata": {}}).name


@pytest.mark.parametrize(
    ("owners", "controlled_by_u1", "has_controller"),
    [
        pytest.param([], False, False, id="no-owner"),
        pytest.param([{"uid": "u1"}], False, False, id="owner-not-controller"),
        pytest.param([{"uid": "u1", "controller": True}], True, True, id="controller"),
        pytest.param([{"uid": "u2", "controller": True}], False, True, id="another-controller"),
    ],
)
def test_owners(owners: list[dict[str, Any]], controlled_by_u1: bool, has_controller: bool) -> None:
    view = ObjectView.of({"metadata": {"ownerReferences": owners}})
    assert view.controlled_by("u1") is controlled_by_u1
    assert view.has_controller is has_controller


def test_view_of_keeps_a_view_views_a_raw_object_and_reads_another_kind_from_its_sections() -> None:
    raw = make_job()
    job = BatchJob.of(raw)
    assert view_of(BatchJob, job) is job
    assert view_of(BatchJob, raw).raw is raw, "the builders called from outside the reconciler take the object as sent"
    generic = ObjectView.of(raw)
    again = view_of(BatchJob, generic)
    assert isinstance(again, BatchJob)
    assert again.raw is raw
    assert (again.metadata, again.spec, again.status) == (generic.metadata, generic.spec, generic.status)
    assert again.spec is generic.spec


def test_the_view_keeps_the_object_as_sent() -> None:
    raw = make_job()
    view = ObjectView.of(raw)
    assert view.raw is raw
    assert view.spec is raw["spec"]


def test_pod_template_containers_and_their_resources() -> None:
    template = PodTemplateView.of(
        {
            "metadata": {"labels": {"app": "x"}},
            "spec": {
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}, {"name": "b"}],
                "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "2"}}}],
            },
        }
    )
    assert template.labels == {"app": "x"}
    a, b, i = template.spec["containers"][0], template.spec["containers"][1], template.spec["initContainers"][0]
    assert template.containers == ([a, b], [i])
    assert template.container_resources == ([{"requests": {"cpu": "1"}}, {}], [{"limits": {"cpu": "2"}}])


def test_a_missing_pod_template_reads_as_empty() -> None:
    template = PodTemplateView.of(None)
    assert (dict(template.raw), dict(template.spec), template.containers) == ({}, {}, (None, None))


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"),
    [
        pytest.param(None, None, 1, id="parallelism-defaults-to-one"),
        pytest.param(3, None, 3, id="parallelism"),
        pytest.param(3, 2, 2, id="capped-by-completions"),
        pytest.param(0, None, 0, id="zero-is-not-missing"),
    ],
)
def test_pod_count(parallelism: int | None, completions: int | None, count: int) -> None:
    assert BatchJob.of(make_job(parallelism=parallelism, completions=completions)).pod_count == count


def test_status_counts_default_to_zero() -> None:
    job = BatchJob.of(make_job())
    assert (job.active, job.ready, job.succeeded, job.uncounted_succeeded, job.started) == (0, 0, 0, 0, False)


def test_status_counts() -> None:
    status: dict[str, Any] = {
        "active": 2,
        "ready": 1,
        "succeeded": 3,
        "startTime": "2026-01-01T00:00:00Z",
        "uncountedTerminatedPods": {"succeeded": ["a", "b"], "failed": ["c"]},
    }
    job = BatchJob.of(make_job() | {"status": status})
    assert (job.active, job.ready, job.succeeded, job.uncounted_succeeded, job.started) == (2, 1, 3, 2, True)


@pytest.mark.parametrize(
    ("conditions", "suspended"),
    [
        pytest.param([], False, id="none"),
        pytest.param([{"type": "Suspended", "status": "False"}], False, id="false"),
        pytest.param([{"type": "Complete", "status": "True"}], False, id="another-type"),
        pytest.param(
            [{"type": "Suspended", "status": "False"}, {"type": "Suspended", "status": "True"}], True, id="any"
        ),
    ],
)
def test_has_condition(conditions: list[dict[str, str]], suspended: bool) -> None:
    assert BatchJob.of(make_job() | {"status": {"conditions": conditions}}).has_condition("Suspended") is suspended


def test_suspend_and_template() -> None:
    job = BatchJob.of(make_job(suspend=True, template_labels={"app": "x"}))
    assert job.suspend
    assert not BatchJob.of(make_job(suspend=False)).suspend
    assert job.template.labels == {"app": "x"}
    assert job.template.raw is job.raw["spec"]["template"]


def make_pod(*, gates: list[str] | None = None, phase: str | None = None, **status: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
    if gates is not None:
        pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    pod["status"] = dict(status) | ({"phase": phase} if phase else {})
    return pod


def test_gated_by_name() -> None:
    pod = Pod.of(make_pod(gates=["other", "kueue.x-k8s.io/admission"]))
    assert pod.gated("kueue.x-k8s.io/admission")
    assert not pod.gated("missing")
    assert not Pod.of(make_pod()).gated("kueue.x-k8s.io/admission")


@pytest.mark.parametrize(
    ("phase", "terminal"),
    [
        pytest.param(None, False, id="no-phase"),
        pytest.param("Running", False, id="running"),
        pytest.param("Succeeded", True, id="succeeded"),
        pytest.param("Failed", True, id="failed"),
    ],
)
def test_terminal(phase: str | None, terminal: bool) -> None:
    pod = Pod.of(make_pod(phase=phase))
    assert (pod.phase, pod.terminal) == (phase, terminal)


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        pytest.param([], False, id="none"),
        pytest.param([{"type": "Ready", "status": "False"}], False, id="not-ready"),
        pytest.param([{"type": "PodScheduled", "status": "True"}], False, id="another-type"),
        pytest.param(
            [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}], True, id="ready"
        ),
    ],
)
def test_ready(conditions: list[dict[str, str]], ready: bool) -> None:
    assert Pod.of(make_pod(conditions=conditions)).ready is ready


def test_deletion() -> None:
    pod = make_pod()
    assert (Pod.of(pod).deletion_timestamp, Pod.of(pod).deletion_grace_seconds) == (None, 0)
    pod["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}
    assert (Pod.of(pod).deletion_timestamp, Pod.of(pod).deletion_grace_seconds) == ("2026-01-01T00:00:00Z", 30)


TEMPLATE = {"spec": {"containers": [{"name": "c"}]}}


def test_pod_sets_as_recorded() -> None:
    record = WorkloadRecord.of({"spec": {"podSets": [{"name": "main", "count": 2, "template": TEMPLATE}, {}]}})
    first, second = record.pod_sets
    assert (first.name, first.count, first.template.raw) == ("main", 2, TEMPLATE)
    assert (second.name, second.count, dict(second.template.raw)) == (None, None, {})
    assert second.name_or("main") == "main"


def test_assignments_of_the_admission() -> None:
    main = {"name": "main", "count": 3, "flavors": {"cpu": "spot"}, "resourceUsage": {"cpu": "3"}}
    admission = {"podSetAssignments": [main, {"name": "w"}]}
    first, worker = WorkloadRecord.of({"status": {"admission": admission}}).assignments
    assert (first.name, first.count, first.flavors, first.resource_usage) == ("main", 3, {"cpu": "spot"}, {"cpu": "3"})
    assert (worker.name, worker.count, worker.flavors, worker.resource_usage) == ("w", 0, {}, {})


def test_no_admission_has_no_assignments() -> None:
    assert WorkloadRecord.of({"status": {"admission": None}}).assignments == ()
    assert WorkloadRecord.of({}).pod_sets == ()


# -- conditions of any object, and a Workload's queue, priority and admission -----------------------------------


def test_the_first_condition_of_a_type_is_found() -> None:
    view = ObjectView.of(
        {
            "status": {
                "conditions": [
                    {"type": "Active", "status": "False", "reason": "FlavorNotFound"},
                    {"type": "Active", "status": "True"},
                    {"type": "Ready", "status": "True"},
                ]
            }
        }
    )
    assert [c["type"] for c in view.conditions] == ["Active", "Active", "Ready"]
    assert view.condition("Active") == {"type": "Active", "status": "False", "reason": "FlavorNotFound"}
    assert view.condition_true("Active") is False, "the first of its type decides"
    assert view.condition_true("Ready") is True
    assert view.condition("Missing") is None
    assert view.condition_true("Missing") is False


def test_no_conditions_read_as_none() -> None:
    view = ObjectView.of({"status": {"conditions": None}})
    assert list(view.conditions) == []
    assert view.condition("Active") is None


@pytest.mark.parametrize(
    ("spec", "queue", "priority", "class_name"),
    [
        pytest.param({}, "", 0, "", id="empty"),
        pytest.param(
            {"queueName": "user-queue", "priority": 100, "priorityClassRef": {"group": "kueue.x-k8s.io", "name": "hi"}},
            "user-queue",
            100,
            "hi",
            id="v1beta2",
        ),
        pytest.param({"priority": 7, "priorityClassName": "lo"}, "", 7, "lo", id="v1beta1"),
        pytest.param({"queueName": None, "priority": "high"}, "", 0, "", id="null-queue-and-not-a-number"),
    ],
)
def test_a_workloads_queue_and_priority(spec: dict[str, Any], queue: str, priority: int, class_name: str) -> None:
    view = WorkloadRecord.of({"spec": spec})
    assert (view.queue_name, view.priority, view.priority_class_name) == (queue, priority, class_name)


@pytest.mark.parametrize(
    ("status", "cluster_queue"),
    [
        pytest.param({}, None, id="none"),
        pytest.param({"admission": {}}, None, id="empty"),
        pytest.param({"admission": {"clusterQueue": "cq", "podSetAssignments": []}}, "cq", id="admitted"),
    ],
)
def test_the_cluster_queue_it_was_admitted_to(status: dict[str, Any], cluster_queue: str | None) -> None:
    assert WorkloadRecord.of({"status": status}).admitted_to == cluster_queue


def test_a_config_maps_data() -> None:
    assert ConfigMap.of({"metadata": {"name": "c"}, "data": {"ca.crt": "PEM"}}).data == {"ca.crt": "PEM"}
    assert ConfigMap.of({"metadata": {"name": "c"}, "data": None}).data == {}
