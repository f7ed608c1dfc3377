import pytest

from tests.doubles.patches import apply_json_patch, apply_merge_patch, apply_patch
from webhook.kube.errors import Invalid


def test_merge_patch_merges_nested_objects_and_deletes_nulls() -> None:
    target = {"a": {"b": 1, "c": 2}, "d": [1, 2], "e": 5}
    result = apply_merge_patch(target, {"a": {"b": None, "x": 3}, "d": [9], "e": None})
    assert result == {"a": {"c": 2, "x": 3}, "d": [9]}
    assert target == {"a": {"b": 1, "c": 2}, "d": [1, 2], "e": 5}, "the input is untouched"


def test_json_patch_applies_operations() -> None:
    target = {"spec": {"suspend": True, "list": [1]}}
    result = apply_json_patch(
        target,
        [{"op": "replace", "path": "/spec/suspend", "value": False}, {"op": "add", "path": "/spec/list/-", "value": 2}],
    )
    assert result == {"spec": {"suspend": False, "list": [1, 2]}}
    assert target["spec"]["suspend"] is True


def test_failed_test_operation_is_invalid() -> None:
    with pytest.raises(Invalid) as caught:
        apply_json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert caught.value.status == 422


def test_patch_kind_must_match_its_shape() -> None:
    with pytest.raises(Invalid):
        apply_patch({}, {"a": 1}, json_patch=True)
    with pytest.raises(Invalid):
        apply_patch({}, [], json_patch=False)
