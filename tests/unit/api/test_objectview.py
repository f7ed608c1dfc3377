"""The read-only views of raw objects: sections read as the dict code read them, the object itself untouched."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.jobs.builders import make_job
from webhook.api.batchjob import BatchJob
from webhook.api.objectview import ObjectView, PodTemplateView, view_of


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


def test_view_of_keeps_a_view_and_views_a_raw_object_or_another_kind() -> None:
    raw = make_job()
    job = BatchJob.of(raw)
    assert view_of(BatchJob, job) is job
    assert view_of(BatchJob, raw).raw is raw
    generic = ObjectView.of(raw)
    again = view_of(BatchJob, generic)
    assert isinstance(again, BatchJob)
    assert again.raw is raw


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
