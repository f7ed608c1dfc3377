"""``ClusterCache.view``: an object's typed view made once per stored version."""

from __future__ import annotations

from typing import Any

from webhook.api.views import BatchJob, ObjectView, WorkloadRecord
from webhook.controller.cache import ClusterCache
from webhook.controller.informer import ChangeType
from webhook.kube import resources as r
from webhook.kube.objects import Object, ObjectKey


def job(version: str, *, suspend: bool = True) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": version},
        "spec": {"suspend": suspend},
    }


def put(cache: ClusterCache, change: ChangeType, obj: Object) -> Object:
    """``obj`` taken in by the cache; the stored object it keeps."""
    cache.apply(r.JOB, change, obj)
    stored = cache.job("ns", "j")
    assert stored is not None
    return stored


def test_a_stored_object_is_viewed_once_per_version() -> None:
    cache = ClusterCache([r.JOB])
    stored = put(cache, "ADDED", job("1"))
    view = cache.view(r.JOB, stored, BatchJob)
    assert view.raw is stored
    assert cache.view(r.JOB, stored, BatchJob) is view
    assert cache.view(r.JOB, stored, ObjectView) is view, "a wider kind is the view already made"

    newer = put(cache, "MODIFIED", job("2", suspend=False))
    again = cache.view(r.JOB, newer, BatchJob)
    assert again is not view
    assert not again.suspend


def test_a_narrower_kind_replaces_the_wider_view_remembered() -> None:
    cache = ClusterCache([r.JOB])
    stored = put(cache, "ADDED", job("1"))
    generic = cache.view(r.JOB, stored, ObjectView)
    narrow = cache.view(r.JOB, stored, BatchJob)
    assert isinstance(narrow, BatchJob)
    assert narrow.spec is generic.spec
    assert cache.view(r.JOB, stored, BatchJob) is narrow


def test_an_object_that_is_not_the_stored_one_is_viewed_each_time_and_not_remembered() -> None:
    cache = ClusterCache([r.JOB, r.WORKLOAD])
    cache.apply(r.JOB, "ADDED", job("1"))
    other = job("1")  # equal, but not the stored dict (a write's result, say)
    first = cache.view(r.JOB, other, BatchJob)
    assert cache.view(r.JOB, other, BatchJob) is not first
    stored = cache.job("ns", "j")
    assert stored is not None
    assert cache.view(r.JOB, stored, BatchJob).raw is stored
    workload: Object = {"metadata": {"name": "w", "namespace": "ns"}}
    assert cache.view(r.WORKLOAD, workload, WorkloadRecord).raw is workload


def test_a_deleted_object_is_no_longer_remembered() -> None:
    cache = ClusterCache([r.JOB])
    stored = put(cache, "ADDED", job("1"))
    view = cache.view(r.JOB, stored, BatchJob)
    cache.apply(r.JOB, "DELETED", stored)
    assert cache.view(r.JOB, stored, BatchJob) is not view


def test_the_typed_reads_hand_out_the_view_made_once_per_stored_version() -> None:
    cache = ClusterCache([r.JOB, r.WORKLOAD, r.CLUSTER_QUEUE])
    stored = put(cache, "ADDED", job("1"))
    viewed = cache.viewed(r.JOB, ObjectKey("ns", "j"), BatchJob)
    assert viewed is not None
    assert viewed is cache.view(r.JOB, stored, BatchJob)
    assert cache.views(r.JOB, BatchJob) == [viewed]
    assert cache.views(r.JOB, BatchJob, namespace="other") == []
    assert cache.viewed(r.JOB, ObjectKey("ns", "gone"), BatchJob) is None

    cache.apply(r.WORKLOAD, "ADDED", {"metadata": {"name": "w", "namespace": "ns", "resourceVersion": "1"}})
    workload = cache.workload("ns", "w")
    assert isinstance(workload, WorkloadRecord)
    assert cache.workloads() == [workload]
    assert cache.workloads()[0] is workload
    assert cache.workload("ns", "missing") is None


def test_a_view_keys_its_object_where_the_cache_stores_it() -> None:
    cache = ClusterCache([r.CLUSTER_QUEUE])
    cache.apply(r.CLUSTER_QUEUE, "ADDED", {"metadata": {"name": "cq", "resourceVersion": "1"}})
    (queue,) = cache.cluster_queues()
    assert queue.key == ObjectKey("", "cq")
    assert cache.cluster_queue("cq") is queue
    assert BatchJob.of(job("1")).key == ObjectKey("ns", "j")


def test_a_view_made_while_its_object_is_replaced_is_not_remembered() -> None:
    # A review worker's thread asks for a view while the loop takes in a newer version: the replacement comes
    # between the worker's look at the store and its remembering the view.
    cache = ClusterCache([r.JOB])
    stored = put(cache, "ADDED", job("1"))

    class Racing(dict[Any, Any]):
        raced = False

        def get(self, key: Any, default: Any = None) -> Any:
            found = super().get(key, default)
            if not self.raced:
                self.raced = True
                cache.apply(r.JOB, "MODIFIED", job("2"))
            return found

    cache._stores[r.JOB] = Racing(cache._stores[r.JOB])
    first = cache.view(r.JOB, stored, BatchJob)
    assert first.raw is stored
    assert cache.view(r.JOB, stored, BatchJob) is not first, "the view of a replaced object is not kept"
