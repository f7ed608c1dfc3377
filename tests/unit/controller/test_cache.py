import asyncio
from typing import Any

import pytest

from webhook.admission.view import ClusterView
from webhook.api.views import WorkloadRecord
from webhook.controller.cache import ClusterCache
from webhook.kube import resources as r
from webhook.kube.objects import Object, ObjectKey

ALL = [r.NAMESPACE, r.LOCAL_QUEUE, r.WORKLOAD_PRIORITY_CLASS, r.WORKLOAD, r.JOB]


def obj(name: str, *, namespace: str = "", version: int = 1, **fields: Any) -> Object:
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(version), **fields.pop("meta", {})}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, **fields}


def workload(name: str = "wl", *, version: int = 1, owner: str | None = None, **status: Any) -> Object:
    meta = {"ownerReferences": [{"uid": owner, "kind": "Job", "name": "j"}]} if owner else {}
    return obj(name, namespace="ns", version=version, meta=meta, status=status)


def condition(kind: str, status: str = "True") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": "r", "message": "m"}


def synced_cache() -> ClusterCache:
    cache = ClusterCache(ALL)
    for resource in ALL:
        cache.replace(resource, [])
    return cache


def test_is_a_cluster_view() -> None:
    view: ClusterView = synced_cache()
    assert view.synced()


def test_synced_only_once_every_kind_was_listed() -> None:
    cache = ClusterCache([r.NAMESPACE, r.JOB])
    cache.replace(r.NAMESPACE, [])
    assert not cache.synced()
    cache.replace(r.JOB, [])
    assert cache.synced()


def test_replace_applies_only_what_changed() -> None:
    cache = synced_cache()
    cache.replace(r.JOB, [obj("a", namespace="ns"), obj("b", namespace="ns")])
    before = cache.generation
    cache.replace(r.JOB, [obj("a", namespace="ns", version=2), obj("c", namespace="ns"), obj("b", namespace="ns")])
    assert cache.generation == before + 2, "a modified and c added; b unchanged"
    assert cache.job("ns", "a")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    cache.replace(r.JOB, [obj("c", namespace="ns")])
    assert cache.generation == before + 4, "a and b deleted"
    assert [j["metadata"]["name"] for j in cache.items(r.JOB)] == ["c"]


def test_stale_watch_events_do_not_roll_the_cache_back() -> None:
    cache = synced_cache()
    assert cache.observe(r.WORKLOAD, workload(version=7, admission={"clusterQueue": "cq"}))
    cache.apply(r.WORKLOAD, "MODIFIED", workload(version=6))
    assert cache.get(r.WORKLOAD, ObjectKey("ns", "wl"))["status"]["admission"] == {"clusterQueue": "cq"}  # type: ignore[index]
    assert not cache.observe(r.WORKLOAD, workload(version=7)), "same version: nothing new"
    cache.apply(r.WORKLOAD, "MODIFIED", workload(version=8))
    assert cache.get(r.WORKLOAD, ObjectKey("ns", "wl"))["status"] == {}  # type: ignore[index]
    cache.apply(r.WORKLOAD, "DELETED", workload(version=9))
    assert cache.workload("ns", "wl") is None


def test_workloads_are_indexed_by_owner_uid() -> None:
    cache = synced_cache()
    cache.apply(r.WORKLOAD, "ADDED", workload("w1", owner="uid-1"))
    cache.apply(r.WORKLOAD, "ADDED", workload("w2", owner="uid-2"))
    assert [w.name for w in cache.workloads_owned_by("uid-1")] == ["w1"]
    # Re-owned, then deleted: the index follows.
    cache.apply(r.WORKLOAD, "MODIFIED", workload("w1", owner="uid-2", version=2))
    assert cache.workloads_owned_by("uid-1") == []
    assert len(cache.workloads_owned_by("uid-2")) == 2
    cache.apply(r.WORKLOAD, "DELETED", workload("w2", owner="uid-2", version=3))
    assert [w.name for w in cache.workloads_owned_by("uid-2")] == ["w1"]


def test_view_answers_from_cached_objects() -> None:
    cache = synced_cache()
    cache.apply(r.NAMESPACE, "ADDED", obj("team", meta={"labels": {"kueue": "on"}}))
    cache.apply(r.LOCAL_QUEUE, "ADDED", obj("lq", namespace="team"))
    cache.apply(r.WORKLOAD_PRIORITY_CLASS, "ADDED", obj("high"))
    assert cache.namespace_labels("team") == {"kueue": "on"}
    assert cache.namespace_labels("nope") is None
    assert cache.has_local_queue("team", "lq")
    assert not cache.has_local_queue("other", "lq")
    assert cache.has_workload_priority_class("high")
    assert not cache.has_workload_priority_class("low")


@pytest.mark.parametrize(
    ("status", "admitted"),
    [
        pytest.param({}, False, id="pending"),
        pytest.param({"conditions": [condition("Admitted")]}, True, id="admitted-condition"),
        pytest.param({"conditions": [condition("Admitted", "False")]}, False, id="admitted-false"),
        pytest.param(
            {"conditions": [condition("QuotaReserved")], "admission": {"clusterQueue": "cq"}},
            True,
            id="reserved-without-checks",
        ),
        pytest.param({"conditions": [condition("QuotaReserved")]}, False, id="reserved-without-admission"),
        pytest.param(
            {
                "conditions": [condition("QuotaReserved")],
                "admission": {"clusterQueue": "cq"},
                "admissionChecks": [{"name": "prov", "state": "Pending"}],
            },
            False,
            id="reserved-checks-pending",
        ),
    ],
)
def test_workload_is_admitted(status: dict[str, Any], admitted: bool) -> None:
    cache = synced_cache()
    cache.apply(r.WORKLOAD, "ADDED", workload(**status))
    assert cache.workload_is_admitted("ns", "wl") is admitted
    assert not cache.workload_is_admitted("ns", "missing")


async def test_wait_changed_wakes_on_the_next_change() -> None:
    cache = synced_cache()
    seen = cache.generation
    waiter = asyncio.create_task(cache.wait_changed(seen))
    await asyncio.sleep(0)
    assert not waiter.done()
    cache.apply(r.JOB, "ADDED", obj("a", namespace="ns"))
    assert await asyncio.wait_for(waiter, 1) > seen


async def test_wait_for_one_object_state() -> None:
    cache = synced_cache()
    key = ObjectKey("ns", "wl")
    waiter = asyncio.create_task(
        cache.wait_for(r.WORKLOAD, key, lambda w: w is not None and bool(w.get("status", {}).get("admission")))
    )
    cache.apply(r.WORKLOAD, "ADDED", workload())
    cache.apply(r.JOB, "ADDED", obj("other", namespace="ns"))
    await asyncio.sleep(0)
    assert not waiter.done()
    cache.apply(r.WORKLOAD, "MODIFIED", workload(version=2, admission={"clusterQueue": "cq"}))
    found = await asyncio.wait_for(waiter, 1)
    assert found is not None
    assert found["metadata"]["resourceVersion"] == "2"
    gone = await asyncio.wait_for(cache.wait_for(r.WORKLOAD, ObjectKey("ns", "nope"), lambda w: w is None), 1)
    assert gone is None


async def test_wait_synced() -> None:
    cache = ClusterCache([r.JOB])
    waiter = asyncio.create_task(cache.wait_synced())
    await asyncio.sleep(0)
    assert not waiter.done()
    cache.replace(r.JOB, [])
    await asyncio.wait_for(waiter, 1)


def test_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="does not hold"):
        ClusterCache([r.JOB]).pods()


def test_a_quiet_observation_is_stored_but_wakes_no_pass_and_is_not_journaled() -> None:
    cache = synced_cache()
    journal = cache.journal()
    cache.apply(r.WORKLOAD, "ADDED", workload(version=1))
    assert journal.take() == {r.WORKLOAD: {ObjectKey("ns", "wl")}}
    wakes, generation = cache.wakes, cache.generation
    assert cache.observe(r.WORKLOAD, workload(version=2), quiet=True)
    assert cache.get(r.WORKLOAD, ObjectKey("ns", "wl"))["metadata"]["resourceVersion"] == "2"
    assert cache.generation == generation + 1  # readers of the whole cache (visibility, dashboard) see it
    assert cache.wakes == wakes
    assert journal.take() == {}
    cache.apply(r.WORKLOAD, "MODIFIED", workload(version=2))  # the watch's echo of our own write
    assert cache.wakes == wakes
    cache.apply(r.WORKLOAD, "MODIFIED", workload(version=3))  # someone else's write
    assert cache.wakes == wakes + 1
    assert journal.take() == {r.WORKLOAD: {ObjectKey("ns", "wl")}}


def test_a_journal_that_overflows_says_so_instead_of_listing() -> None:
    cache = synced_cache()
    journal = cache.journal()
    journal._limit = 2
    for i in range(3):
        cache.apply(r.WORKLOAD, "ADDED", workload(f"wl-{i}"))
    assert journal.take() is None
    cache.apply(r.WORKLOAD, "ADDED", workload("wl-3"))
    assert journal.take() == {r.WORKLOAD: {ObjectKey("ns", "wl-3")}}


def test_objects_are_kept_without_managed_fields_whichever_way_they_come_in() -> None:
    cache = synced_cache()
    managed = [{"manager": "turnstile", "operation": "Update", "fieldsV1": {"f:spec": {}}}]

    def sent(name: str, version: int) -> Object:
        return workload(name, version=version) | {"metadata": {**workload(name)["metadata"], "managedFields": managed}}

    listed, watched, written = sent("a", 1), sent("b", 1), sent("c", 1)
    cache.replace(r.WORKLOAD, [listed])
    cache.apply(r.WORKLOAD, "ADDED", watched)
    assert cache.observe(r.WORKLOAD, written)
    for name, original in (("a", listed), ("b", watched), ("c", written)):
        kept = cache.get(r.WORKLOAD, ObjectKey("ns", name))
        assert kept is not None
        assert "managedFields" not in kept["metadata"]
        assert kept == {**original, "metadata": {k: v for k, v in original["metadata"].items() if k != "managedFields"}}
        assert original["metadata"]["managedFields"] == managed, "the caller's object is left as it was"


def test_a_workload_is_decoded_once_per_version_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    from webhook.api import model

    decoded: list[str] = []
    real = model.decode_workload

    def counting(raw: Any) -> model.Workload:
        decoded.append(raw["metadata"]["resourceVersion"])
        return real(raw)

    monkeypatch.setattr(model, "decode_workload", counting)
    cache = synced_cache()
    cache.apply(r.WORKLOAD, "ADDED", workload(version=1, admission={"clusterQueue": "cq"}))
    first = cache.workload("ns", "wl")
    assert first is not None
    typed = cache.typed_workload(first)
    assert typed.status.has_admission
    assert typed.metadata.name == "wl"
    assert cache.typed_workload(first) is typed
    assert cache.typed_workload(cache.workload("ns", "wl")) is typed  # type: ignore[arg-type]
    assert cache.workload("ns", "wl") is first, "the stored version's view is made once too"
    assert decoded == ["1"]

    cache.apply(r.WORKLOAD, "MODIFIED", workload(version=2))
    second = cache.workload("ns", "wl")
    assert second is not None
    assert not cache.typed_workload(second).status.has_admission
    assert cache.typed_workload(first).status.has_admission, "an older version read is its own, decoded again"
    cache.typed_workload(second)
    assert decoded == ["1", "2", "1"]

    stray = WorkloadRecord.of(workload(version=3))
    cache.typed_workload(stray)
    cache.typed_workload(stray)
    assert decoded == ["1", "2", "1", "3", "3"], "a dict the cache does not hold is never remembered"

    cache.apply(r.WORKLOAD, "DELETED", second.raw)
    assert cache.typed_workload(second) is not None
    assert decoded[-1] == "2", "a deleted Workload's typed value is forgotten with it"


def test_equal_values_of_objects_stored_through_any_feed_are_one_object() -> None:
    cache = synced_cache()
    spec = {"queueName": "q", "podSets": [{"name": "main", "count": 1}]}
    listed, watched, written = (obj(n, namespace="ns", spec={**spec}) for n in ("a", "b", "c"))
    cache.replace(r.WORKLOAD, [listed])
    cache.apply(r.WORKLOAD, "ADDED", watched)
    assert cache.observe(r.WORKLOAD, written)
    kept = [k for n in ("a", "b", "c") if (k := cache.get(r.WORKLOAD, ObjectKey("ns", n))) is not None]
    assert [k["spec"] for k in kept] == [spec, spec, spec]
    assert kept[0]["spec"] is kept[1]["spec"] is kept[2]["spec"]
    assert cache.stored_form(listed)["spec"] is kept[0]["spec"], "a list's pages may be taken in their stored form"


def test_a_stored_form_is_taken_in_as_it_is_and_anything_else_is_copied() -> None:
    cache = synced_cache()
    managed = {"managedFields": [{"manager": "turnstile"}]}
    formed = cache.stored_form(obj("a", namespace="ns", meta=managed))
    raw = obj("b", namespace="ns", meta=managed)
    cache.replace(r.WORKLOAD, [formed, raw])
    assert cache.get(r.WORKLOAD, ObjectKey("ns", "a")) is formed, "not copied a second time"
    assert "managedFields" not in formed["metadata"]
    kept = cache.get(r.WORKLOAD, ObjectKey("ns", "b"))
    assert kept is not raw
    assert kept is not None
    assert "managedFields" not in kept["metadata"]


def test_a_stored_form_a_replace_did_not_take_is_copied_when_it_comes_later() -> None:
    cache = synced_cache()
    formed = cache.stored_form(workload("a"))
    cache.replace(r.WORKLOAD, [])
    cache.replace(r.WORKLOAD, [formed])
    kept = cache.get(r.WORKLOAD, ObjectKey("ns", "a"))
    assert kept == formed
    assert kept is not formed, "forms are forgotten by the replace after them"
