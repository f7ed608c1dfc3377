from datetime import UTC, datetime
from typing import Any

import pytest

from webhook.controller.interner import Interner
from webhook.kube.objects import Object


def pod_set() -> dict[str, Any]:
    resources = {"requests": {"cpu": "1", "memory": "200Mi"}}
    container = {"name": "main", "image": "registry.example/sample:1", "resources": resources}
    return {"name": "main", "count": 4, "template": {"spec": {"containers": [container]}}}


def workload(name: str, **spec: Any) -> Object:
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "managedFields": [{"manager": "turnstile"}]}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "metadata": meta, "spec": {"podSets": [pod_set()], **spec}}


def fresh(value: str) -> str:
    """An equal string that is not the same object (as two JSON decodes give)."""
    return "".join(list(value))


def test_the_stored_copy_is_the_object_without_managed_fields() -> None:
    sent = workload("a", queueName="q")
    stored = Interner().stored(sent)
    assert stored == {**sent, "metadata": {k: v for k, v in sent["metadata"].items() if k != "managedFields"}}
    assert list(stored) == list(sent), "keys in the object's own order"
    assert sent["metadata"]["managedFields"] == [{"manager": "turnstile"}], "the given object is left as it was"


def test_equal_subtrees_of_two_objects_are_one_object() -> None:
    interner = Interner()
    a, b = interner.stored(workload("a")), interner.stored(workload("b"))
    assert a["spec"] is b["spec"]
    assert a["apiVersion"] is b["apiVersion"]
    assert a["metadata"] is not b["metadata"]


def test_equal_strings_are_one_string_and_inner_subtrees_are_shared_when_their_parents_differ() -> None:
    interner = Interner()
    a = interner.stored(workload("a", queueName=fresh("queue-1")))
    b = interner.stored(workload("b", queueName=fresh("queue-1"), priority=5))
    assert a["spec"] is not b["spec"]
    assert a["spec"]["queueName"] is b["spec"]["queueName"]
    assert a["spec"]["podSets"] is b["spec"]["podSets"]
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]


def test_the_given_objects_containers_are_not_the_stored_ones() -> None:
    sent = workload("a")
    stored = Interner().stored(sent)
    assert stored["spec"] == sent["spec"]
    assert stored["spec"] is not sent["spec"], "mutating the caller's object later must not reach the cache"
    assert stored["spec"]["podSets"][0] is not sent["spec"]["podSets"][0]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param({"x": True}, {"x": 1}, id="true-is-not-one"),
        pytest.param({"x": 1}, {"x": 1.0}, id="int-is-not-float"),
        pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, id="key-order-kept"),
        pytest.param({"x": None}, {"x": "null"}, id="none-is-not-a-string"),
    ],
)
def test_values_equal_in_python_but_not_as_json_are_kept_apart(first: Any, second: Any) -> None:
    interner = Interner()
    a = interner.stored({"metadata": {"name": "a"}, "spec": first})
    b = interner.stored({"metadata": {"name": "b"}, "spec": second})
    assert list(b["spec"].items()) == list(second.items())
    assert [type(v) for v in b["spec"].values()] == [type(v) for v in second.values()]
    assert a["spec"] is not b["spec"]


def test_values_json_does_not_have_are_copied_not_shared() -> None:
    interner = Interner()
    when = datetime(2026, 1, 1, tzinfo=UTC)
    a = interner.stored({"metadata": {"name": "a"}, "status": {"at": when}})
    b = interner.stored({"metadata": {"name": "b"}, "status": {"at": when.isoformat()}})
    assert a["status"]["at"] is when
    assert b["status"]["at"] == when.isoformat()


def test_each_table_is_emptied_when_full_and_what_is_shared_stays_equal() -> None:
    interner = Interner(limit=4)
    stored = [interner.stored({"metadata": {"name": f"w{i}"}, "spec": {"n": i}}) for i in range(20)]
    assert len(interner) <= 8
    assert [s["spec"] for s in stored] == [{"n": i} for i in range(20)]
    again = interner.stored({"metadata": {"name": "x"}, "spec": {"n": 19}})
    assert again["spec"] is stored[19]["spec"], "the newest values are still there to share"


def test_an_object_without_metadata_is_copied_as_it_is() -> None:
    interner = Interner()
    assert interner.stored({"kind": "Status", "metadata": None}) == {"kind": "Status", "metadata": None}
    assert interner.stored({"kind": "Status"}) == {"kind": "Status"}
