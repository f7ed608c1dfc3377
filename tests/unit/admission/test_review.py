"""AdmissionReview decoding and encoding follow the API server's contract."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from tests.unit.admission.builders import decode_patch, make_job, review_body
from webhook.admission import review
from webhook.admission.verdict import Verdict, allow, deny


def body(**changes: Any) -> bytes:
    data = review_body(make_job())
    data["request"].update(changes)
    return orjson.dumps(data)


def test_decodes_the_fields_policies_read() -> None:
    request = review.decode(orjson.dumps(review_body(make_job(), operation="UPDATE", old=make_job(), dry_run=True)))
    assert (request.group, request.version, request.kind) == ("batch", "v1", "Job")
    assert request.operation == "UPDATE"
    assert request.namespace == "team-a"
    assert request.username == "alice"
    assert request.dry_run is True
    assert request.object is not None
    assert request.old_object is not None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b'{"apiVersion": "admission.k8s.io/v1", "kind"', "not valid JSON", id="truncated-json"),
        pytest.param(b"[]", "JSON object", id="not-an-object"),
        pytest.param(
            b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}',
            "expected apiVersion",
            id="v1beta1",
        ),
        pytest.param(b'{"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}', "expected apiVersion", id="wrong-kind"),
        pytest.param(
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "request must be", id="no-request"
        ),
        pytest.param(body(uid=""), "request.uid", id="empty-uid"),
        pytest.param(body(uid="x" * 500), "request.uid", id="huge-uid"),
        pytest.param(body(uid=7), "request.uid", id="numeric-uid"),
        pytest.param(body(operation="PATCH"), "request.operation", id="unknown-operation"),
        pytest.param(body(kind="Job"), "request.kind", id="kind-not-an-object"),
        pytest.param(body(object=[1, 2]), "request.object", id="object-is-a-list"),
        pytest.param(body(userInfo={"groups": "admins"}), "groups", id="groups-not-a-list"),
        pytest.param(body(dryRun="yes"), "dryRun", id="dry-run-not-bool"),
        pytest.param(b"[" * 5000 + b"]" * 5000, "not valid JSON", id="deep-nesting"),
    ],
)
def test_malformed_reviews_are_refused_with_a_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(review.MalformedReview, match=reason):
        review.decode(raw)


def test_missing_uid_is_malformed() -> None:
    data = review_body(make_job())
    del data["request"]["uid"]
    with pytest.raises(review.MalformedReview, match="uid"):
        review.decode(orjson.dumps(data))


def test_response_echoes_uid_and_envelope() -> None:
    out = orjson.loads(review.encode("abc", allow(), mutating=False))
    assert out == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "abc", "allowed": True},
    }


def test_mutating_response_carries_a_base64_json_patch() -> None:
    ops = ({"op": "add", "path": "/spec/suspend", "value": True},)
    out = orjson.loads(review.encode("abc", Verdict(allowed=True, patch=ops), mutating=True))["response"]
    assert out["patchType"] == "JSONPatch"
    assert decode_patch(out["patch"]) == list(ops)


def test_validating_response_never_carries_a_patch() -> None:
    ops = ({"op": "add", "path": "/spec/suspend", "value": True},)
    out = orjson.loads(review.encode("abc", Verdict(allowed=True, patch=ops), mutating=False))["response"]
    assert "patch" not in out
    assert "patchType" not in out


def test_denial_has_a_status_message_and_no_patch() -> None:
    out = orjson.loads(review.encode("abc", deny("spec.suspend: Forbidden: not admitted"), mutating=True))["response"]
    assert out["allowed"] is False
    assert out["status"] == {"code": 403, "message": "spec.suspend: Forbidden: not admitted"}
    assert "patch" not in out


def test_warnings_are_kept_short() -> None:
    out = orjson.loads(review.encode("abc", allow(warnings=["w" * 1000]), mutating=False))["response"]
    assert len(out["warnings"][0]) <= 256


def test_objects_are_decoded_typed_next_to_the_objects_as_sent() -> None:
    job = make_job(labels={"team": "b"}, annotations={"note": "x"}, owner_kind="CronJob")
    request = review.decode(orjson.dumps(review_body(job, operation="UPDATE", old=make_job())))
    assert request.object is not None
    assert request.old_object is not None
    assert request.object.metadata.name == "pi"
    assert request.object.metadata.labels["team"] == "b"
    assert request.object.metadata.annotations == {"note": "x"}
    owner = request.object.metadata.controller_owner()
    assert owner is not None
    assert (owner.group, owner.kind) == ("batch", "CronJob")
    assert request.old_object.metadata.controller_owner() is None
    assert request.raw_object == job


def test_a_review_without_objects_has_none_typed_and_empty_as_sent() -> None:
    request = review.decode(orjson.dumps(review_body(None, operation="DELETE", old=make_job())))
    assert request.object is None
    assert not request.has_object
    assert request.raw_object == {}
    assert request.old_object is not None


def _with_metadata(**metadata: Any) -> dict[str, Any]:
    job = make_job()
    job["metadata"].update(metadata)
    return job


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        pytest.param(_with_metadata(labels={"a": 1}), "request.object.metadata.labels[...]", id="label-not-a-string"),
        pytest.param(_with_metadata(annotations=["a"]), "request.object.metadata.annotations", id="annotations-list"),
        pytest.param(_with_metadata(name=7), "request.object.metadata.name", id="name-not-a-string"),
        pytest.param(
            _with_metadata(ownerReferences=[{"kind": "Job", "controller": "yes"}]),
            "request.object.metadata.ownerReferences[0].controller",
            id="controller-not-a-boolean",
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {"schedulingGates": [{"nam": "x"}]}},
            "request.object.spec.schedulingGates[0]",
            id="gate-without-a-name",
        ),
        pytest.param({"metadata": "pi"}, "request.object.metadata", id="metadata-not-an-object"),
    ],
)
def test_an_object_of_the_wrong_shape_is_refused_naming_the_field(obj: dict[str, Any], field: str) -> None:
    data = review_body(make_job())
    data["request"]["object"] = obj
    request = review.decode(orjson.dumps(data))  # the envelope is fine; the object is decoded when first read
    assert request.raw_object == obj
    with pytest.raises(review.MalformedReview) as caught:
        _ = request.object
    assert f"`{field}`" in caught.value.reason


def test_an_old_object_of_the_wrong_shape_is_refused_naming_the_field() -> None:
    request = review.decode(orjson.dumps(review_body(make_job(), operation="UPDATE", old=_with_metadata(labels="x"))))
    assert request.object is not None
    with pytest.raises(review.MalformedReview, match=r"request\.oldObject\.metadata\.labels"):
        _ = request.old_object


# -- the checked view of an object under review ------------------------------------------------------------------


def test_the_view_reads_a_nested_object_and_list_as_sent() -> None:
    seen = review.Reviewed.of({"spec": {"preemption": {"withinClusterQueue": "Never"}, "podSets": [{"name": "a"}]}})
    assert seen.mapping("spec", "preemption") == {"withinClusterQueue": "Never"}
    assert seen.sequence("spec", "podSets") == [{"name": "a"}]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({}, id="absent"),
        pytest.param({"spec": None}, id="null-parent"),
        pytest.param({"spec": {"podSets": None}}, id="null"),
    ],
)
def test_the_view_reads_an_absent_or_null_field_as_empty(obj: dict[str, Any]) -> None:
    seen = review.Reviewed.of(obj)
    assert seen.mapping("spec", "podSets") == {}
    assert seen.sequence("spec", "podSets") == []
    assert seen.dicts("spec", "podSets") == []


@pytest.mark.parametrize(
    ("obj", "read", "reason"),
    [
        pytest.param({"spec": []}, lambda v: v.mapping("spec", "x"), "spec must be an object", id="parent"),
        pytest.param({"spec": {"x": 1}}, lambda v: v.mapping("spec", "x"), "spec.x must be an object", id="object"),
        pytest.param({"spec": "s"}, lambda v: v.sequence("spec", "x"), "spec must be an object", id="list-parent"),
        pytest.param({"spec": {"x": {}}}, lambda v: v.sequence("spec", "x"), "spec.x must be a list", id="list"),
        pytest.param({"spec": {"x": "y"}}, lambda v: v.dicts("spec", "x"), "spec.x must be a list", id="entries"),
    ],
)
def test_the_view_refuses_a_field_of_the_wrong_shape_naming_its_path(
    obj: dict[str, Any], read: Callable[[review.Reviewed], object], reason: str
) -> None:
    with pytest.raises(review.MalformedReview, match=reason):
        read(review.Reviewed.of(obj))


def test_the_view_gives_each_object_entry_of_a_list_its_own_view_skipping_the_others() -> None:
    seen = review.Reviewed.of({"status": {"reclaimablePods": [{"name": "a", "count": 1}, "junk", None, {"name": "b"}]}})
    entries = seen.dicts("status", "reclaimablePods")
    assert [e.raw for e in entries] == [{"name": "a", "count": 1}, {"name": "b"}]
    assert entries[0].sequence("template", "spec", "containers") == []  # its paths are the entry's own


def test_the_request_views_each_object_once() -> None:
    request = review.decode(orjson.dumps(review_body(make_job(), operation="UPDATE", old=make_job())))
    assert request.view is request.view
    assert isinstance(request.old_view, review.Reviewed)
    assert request.view.raw == request.raw_object
