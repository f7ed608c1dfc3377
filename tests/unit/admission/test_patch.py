"""JSON patches are minimal, escape keys, create missing parents, and are empty when nothing changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonpatch
import pytest

from webhook.admission.patch import Patch, escape
from webhook.admission.review import MalformedReview


def test_escapes_json_pointer_tokens() -> None:
    assert escape("kueue.x-k8s.io/queue-name") == "kueue.x-k8s.io~1queue-name"
    assert escape("a~b") == "a~0b"


def test_missing_map_is_created_in_one_operation_holding_every_entry() -> None:
    obj = {"metadata": {"name": "x"}}
    patch = Patch(obj)
    patch.set_entry(("metadata", "labels"), "a/b", "1")
    patch.set_entry(("metadata", "labels"), "c", "2")
    assert patch.ops == [{"op": "add", "path": "/metadata/labels", "value": {"a/b": "1", "c": "2"}}]


def test_existing_map_gets_an_escaped_add_and_equal_values_nothing() -> None:
    obj = {"metadata": {"labels": {"keep": "1", "c": "2"}}}
    patch = Patch(obj)
    patch.set_entry(("metadata", "labels"), "a/b", "1")
    patch.set_entry(("metadata", "labels"), "c", "2")
    assert patch.ops == [{"op": "add", "path": "/metadata/labels/a~1b", "value": "1"}]


def test_several_entries_are_set_in_order_each_as_set_entry_would() -> None:
    patch = Patch({"metadata": {"labels": {"same": "1", "other": "old"}}})
    patch.set_entries(("metadata", "labels"), {"same": "1", "other": "new", "a/b": "2"})
    assert patch.ops == [
        {"op": "replace", "path": "/metadata/labels/other", "value": "new"},
        {"op": "add", "path": "/metadata/labels/a~1b", "value": "2"},
    ]
    created = Patch({"metadata": {}})
    created.set_entries(("metadata", "annotations"), {"x": "1", "y": "2"})
    created.set_entries(("metadata", "annotations"), {})
    assert created.ops == [{"op": "add", "path": "/metadata/annotations", "value": {"x": "1", "y": "2"}}]


def test_changed_value_is_replaced() -> None:
    patch = Patch({"spec": {"suspend": False}})
    patch.set_field(("spec", "suspend"), True)
    assert patch.ops == [{"op": "replace", "path": "/spec/suspend", "value": True}]


def test_list_items_are_appended_once() -> None:
    gate = {"name": "g"}
    patch = Patch({"spec": {}})
    patch.append_unique(("spec", "schedulingGates"), gate)
    patch.append_unique(("spec", "schedulingGates"), gate)
    obj = jsonpatch.apply_patch({"spec": {}}, patch.ops)
    assert obj == {"spec": {"schedulingGates": [gate]}}
    again = Patch(obj)
    again.append_unique(("spec", "schedulingGates"), gate)
    assert again.ops == []


def test_append_to_existing_list_uses_dash() -> None:
    patch = Patch({"metadata": {"finalizers": ["other"]}})
    patch.append_unique(("metadata", "finalizers"), "mine")
    assert patch.ops == [{"op": "add", "path": "/metadata/finalizers/-", "value": "mine"}]


@pytest.mark.parametrize(
    ("obj", "intent", "reason"),
    [
        pytest.param(
            {"metadata": "x"}, lambda p: p.set_entry(("metadata", "labels"), "a", "1"), "metadata must be", id="meta"
        ),
        pytest.param({"spec": []}, lambda p: p.set_field(("spec", "suspend"), True), "spec must be", id="spec"),
        pytest.param(
            {"spec": {"schedulingGates": "g"}},
            lambda p: p.append_unique(("spec", "schedulingGates"), {"name": "g"}),
            "spec.schedulingGates must be a list",
            id="gates",
        ),
    ],
)
def test_a_parent_of_the_wrong_shape_is_malformed_naming_it(
    obj: dict[str, Any], intent: Callable[[Patch], None], reason: str
) -> None:
    with pytest.raises(MalformedReview, match=reason):
        intent(Patch(obj))


def test_a_null_field_is_replaced() -> None:
    patch = Patch({"spec": {"suspend": None}})
    patch.set_field(("spec", "suspend"), True)
    assert patch.ops == [{"op": "replace", "path": "/spec/suspend", "value": True}]
