"""``ClusterCache``: the one in-memory picture of the cluster that the webhook and the scheduler read.

Owns: the objects informers deliver (one store per kind), a few indexes, each Workload's typed value (decoded
once per stored version, on first read: ``typed_workload``), each object's typed view (made once per stored
version, on first read: ``view``), the ``ClusterView`` answers the
admission policies ask, and change notification (listeners, key queues, a change counter, per-object waits).
Must not: talk to the API server or decide anything. Every mutation is a synchronous method, so a read and the
write that depends on it can never be split by an ``await``.

The reconciler takes objects through the typed reads (``workload``, ``workloads``, ``cluster_queue``, ``pods``, ...,
and ``views`` / ``viewed`` for any kind): each object as its view (``webhook.api.views``), made once per stored
version (``view``), so the controller passes views, not dicts (a write copies a view's ``raw`` whole). The generic
reads (``get``, ``items``, ``job``) hand out the stored dicts: for the feeds, for decoders into other types (the
visibility API, the dashboard) and for the ``ClusterView`` answers review workers ask from a thread of their own.
Objects handed out are the stored dicts themselves, shared, for speed: never mutate them; copy first. They are
stored without ``metadata.managedFields`` (nothing of ours reads them, and they were about half of a Workload's
memory): a body built from a cached object and sent back (a PUT) leaves them out, which the API server takes as
"keep them as they are". And they are stored as ``Interner`` copies: a string, dict or list equal to one another
stored object holds is that same one, shared between them (most of what Workloads hold repeats), which is one
more reason never to mutate what the cache hands out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple, TypeVar

from webhook.api import constants, model
from webhook.api.views import ObjectView, Pod, PriorityClass, WorkloadRecord, view_of
from webhook.controller.informer import ChangeType
from webhook.controller.interner import Interner
from webhook.jobs.poddefaults import PodDefaults, runtime_overheads
from webhook.kube import resources as r
from webhook.kube.objects import Object, ObjectKey, key_of, labels_of
from webhook.kube.resources import Resource

KIND_KEY = tuple[Resource, ObjectKey]
_View = TypeVar("_View", bound=ObjectView)


class Change(NamedTuple):
    """One change to the cache: ``old`` is None when added, ``new`` is None when deleted."""

    resource: Resource
    key: ObjectKey
    type: ChangeType
    old: Object | None
    new: Object | None


def _version(obj: Object | None) -> int | None:
    # resourceVersions are opaque by contract but etcd revisions in practice; compare only when numeric.
    raw = ((obj or {}).get("metadata") or {}).get("resourceVersion")
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


class ChangeJournal:
    """The keys changed since the last ``take``, per resource; past ``limit`` keys it only remembers "many"."""

    def __init__(self, limit: int = 50_000, *, quiet: bool = False) -> None:
        self.quiet = quiet  # notes quiet observations too
        self._limit = limit
        self._keys: dict[Resource, set[ObjectKey]] = {}
        self._count = 0
        self._overflow = False

    def note(self, resource: Resource, key: ObjectKey) -> None:
        if self._overflow:
            return
        keys = self._keys.setdefault(resource, set())
        if key not in keys:
            keys.add(key)
            self._count += 1
            if self._count > self._limit:
                self._overflow, self._keys = True, {}

    def take(self) -> dict[Resource, set[ObjectKey]] | None:
        """What changed since the last call (and forget it); None when too much changed to list."""
        keys, overflow = self._keys, self._overflow
        self._keys, self._count, self._overflow = {}, 0, False
        return None if overflow else keys


class ClusterCache:
    """Feeds: ``replace``/``apply`` (informers), ``observe`` (our own write results). Implements ClusterView."""

    def __init__(self, resources: Iterable[Resource]) -> None:
        self._stores: dict[Resource, dict[ObjectKey, Object]] = {res: {} for res in resources}
        # Every object is stored as the interner's copy: without managedFields, equal values shared across objects.
        self._interner = Interner()
        self._formed: dict[int, Object] = {}  # stored forms made for a list in progress, by id (``stored_form``)
        self._synced: set[Resource] = set()
        self._synced_event = asyncio.Event()
        self._workloads_by_owner: dict[str, set[ObjectKey]] = {}
        # The typed value of a stored Workload, next to the dict it was decoded from (the stored dict is replaced
        # whenever another version is taken in, so "the same dict" is "the same resourceVersion").
        self._typed: dict[ObjectKey, tuple[Mapping[str, object], model.Workload]] = {}
        self._object_waiters: dict[KIND_KEY, set[asyncio.Event]] = {}
        self._changed = asyncio.Event()
        self.generation = 0  # bumped on every change
        # Bumped on every change but quiet observations: what the reconciler's loop waits on.
        self.wakes = 0
        self._woken = asyncio.Event()
        self._journals: list[ChangeJournal] = []
        self._listeners: list[Callable[[Change, bool], None]] = []
        # The view of a stored object, by the object's id, made on first read (``view``) and dropped when that
        # object is replaced or deleted (an entry holds its object, so the id cannot be reused while it exists).
        self._views: dict[int, ObjectView] = {}
        self.listen(self._forget_view)

    # -- feeding (InformerSink) -----------------------------------------------------------------

    def stored_form(self, obj: Object) -> Object:
        """The copy of ``obj`` the cache keeps (without managedFields, equal values shared): for a list to take
        as its pages arrive, so that they are not all held at once. The feeds take either form; this one is
        taken in as it is by the next ``replace`` (not copied again), and forgotten by it if not among its objects."""
        formed = self._interner.stored(obj)
        self._formed[id(formed)] = formed
        return formed

    def _stored(self, obj: Object) -> Object:
        # Held in ``_formed`` (a strong reference), an id can not have been reused by another object.
        return obj if self._formed.pop(id(obj), None) is obj else self._interner.stored(obj)

    def replace(self, resource: Resource, objects: list[Object]) -> None:
        store = self._store(resource)
        fresh = {key_of(obj): obj for obj in objects}
        for key in [k for k in store if k not in fresh]:
            self._set(resource, key, None)
        for key, obj in fresh.items():
            old = store.get(key)
            version = _version(obj)
            # Same resourceVersion means same object; compare contents only when versions are unusable.
            if old is None or _version(old) != version:
                self._set(resource, key, self._stored(obj))
            elif version is None and old != (kept := self._stored(obj)):
                self._set(resource, key, kept)
        # What a failed list (or one of another kind, running meanwhile) formed is not held past a replace; the
        # other list's objects are then copied once more when it ends, which costs time, never correctness.
        self._formed.clear()
        if resource not in self._synced:
            self._synced.add(resource)
            if self.synced():
                self._synced_event.set()

    def apply(self, resource: Resource, change: ChangeType, obj: Object) -> None:
        key = key_of(obj)
        old = self._store(resource).get(key)
        if change == "DELETED":
            self._set(resource, key, None)
            return
        stored, incoming = _version(old), _version(obj)
        if stored is not None and incoming is not None and incoming <= stored:
            return  # already know this or a newer version (e.g. through ``observe``)
        self._set(resource, key, self._stored(obj))

    def observe(self, resource: Resource, obj: Object, *, quiet: bool = False) -> bool:
        """Take in an object a write of ours returned, unless a newer version is already known.

        Lets the writer read its own writes at once instead of waiting for the watch. Returns True if taken.
        ``quiet``: the write changed only information (a pending reason, a queue's status) that nothing reacts
        to, so it does not count in ``wakes`` (what the reconciler's loop waits on); the watch's echo of the same
        version is dropped as already known, so it does not count either.
        """
        key = key_of(obj)
        old = self._store(resource).get(key)
        stored, incoming = _version(old), _version(obj)
        if old is not None and (stored is None or incoming is None or incoming <= stored):
            return False
        self._set(resource, key, self._stored(obj), wake=not quiet)
        return True

    def forget(self, resource: Resource, key: ObjectKey) -> None:
        """Drop an object a write of ours deleted, without waiting for the watch."""
        self._set(resource, key, None)

    def _store(self, resource: Resource) -> dict[ObjectKey, Object]:
        try:
            return self._stores[resource]
        except KeyError:
            raise KeyError(f"the cache does not hold {resource}") from None

    def _set(self, resource: Resource, key: ObjectKey, obj: Object | None, *, wake: bool = True) -> None:
        store = self._stores[resource]
        old = store.get(key)
        if old is None and obj is None:
            return
        if obj is None:
            del store[key]
        else:
            store[key] = obj
        if resource == r.WORKLOAD:
            self._index_owner(key, old, obj)
            self._typed.pop(key, None)
        kind: ChangeType = "ADDED" if old is None else "DELETED" if obj is None else "MODIFIED"
        self._notify(Change(resource, key, kind, old, obj), wake=wake)

    def _index_owner(self, key: ObjectKey, old: Object | None, new: Object | None) -> None:
        for obj, add in ((old, False), (new, True)):
            for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []:
                uid = ref.get("uid")
                if not uid:
                    continue
                keys = self._workloads_by_owner.setdefault(uid, set())
                if add:
                    keys.add(key)
                else:
                    keys.discard(key)
                    if not keys:
                        del self._workloads_by_owner[uid]

    # -- change notification --------------------------------------------------------------------

    def _notify(self, change: Change, *, wake: bool = True) -> None:
        for journal in self._journals:
            if wake or journal.quiet:  # quiet changes concern no decision
                journal.note(change.resource, change.key)
        for listener in self._listeners:
            listener(change, not wake)
        self.generation += 1
        self._changed.set()
        self._changed = asyncio.Event()
        for event in self._object_waiters.get((change.resource, change.key), ()):
            event.set()
        if wake:
            self.wake()

    def journal(self, *, quiet: bool = False) -> ChangeJournal:
        """A new record of which objects change from now on (for work proportional to change); ``quiet``: quiet
        observations too (for whoever keeps a copy of the objects, rather than deciding on their changes)."""
        journal = ChangeJournal(quiet=quiet)
        self._journals.append(journal)
        return journal

    def listen(self, listener: Callable[[Change, bool], None]) -> None:
        """Call ``listener(change, quiet)`` on every change from now on, synchronously, before anyone is woken:
        for whoever must know what an object was (a deleted Workload's owners), not only that it changed."""
        self._listeners.append(listener)

    async def wait_changed(self, after: int) -> int:
        """Wait until ``generation`` exceeds ``after``; returns the new generation.

        Pattern: ``seen = cache.generation; ...work...; seen = await cache.wait_changed(seen)``.
        """
        while self.generation <= after:
            await self._changed.wait()
        return self.generation

    def wake(self) -> None:
        """Wake the waiters on ``wakes`` without a change (a write was refused: look again)."""
        self.wakes += 1
        self._woken.set()
        self._woken = asyncio.Event()

    async def wait_woken(self, after: int) -> int:
        """Like ``wait_changed``, on ``wakes``: quiet observations do not end the wait."""
        while self.wakes <= after:
            await self._woken.wait()
        return self.wakes

    async def wait_for(
        self,
        resource: Resource,
        key: ObjectKey,
        predicate: Callable[[Object | None], bool],
    ) -> Object | None:
        """Wait until ``predicate`` holds for that object (None while absent); returns it. Wrap in a timeout."""
        event = asyncio.Event()
        waiters = self._object_waiters.setdefault((resource, key), set())
        waiters.add(event)
        try:
            while not predicate(current := self._store(resource).get(key)):
                event.clear()
                await event.wait()
            return current
        finally:
            waiters.discard(event)
            if not waiters:
                self._object_waiters.pop((resource, key), None)

    async def wait_synced(self) -> None:
        await self._synced_event.wait()

    # -- generic reads --------------------------------------------------------------------------

    def get(self, resource: Resource, key: ObjectKey) -> Object | None:
        return self._store(resource).get(key)

    def items(self, resource: Resource, namespace: str | None = None) -> Iterator[Object]:
        store = self._store(resource)
        if namespace is None:
            return iter(list(store.values()))
        # list() first: a C-level copy no other thread can interleave with (review workers read from a thread).
        return iter([obj for key, obj in list(store.items()) if key.namespace == namespace])

    def count(self, resource: Resource) -> int:
        return len(self._store(resource))

    def is_synced(self, resource: Resource) -> bool:
        return resource in self._synced

    def job(self, namespace: str, name: str) -> Object | None:
        return self.get(r.JOB, ObjectKey(namespace, name))

    def jobs(self, namespace: str | None = None) -> list[Object]:
        return list(self.items(r.JOB, namespace))

    # -- typed reads: each object through its view (``view``), made once per stored version ----------------

    def views(self, resource: Resource, kind: type[_View], namespace: str | None = None) -> list[_View]:
        """Every object of ``resource`` (in ``namespace``), as a ``kind``."""
        return [self.view(resource, obj, kind) for obj in self.items(resource, namespace)]

    def viewed(self, resource: Resource, key: ObjectKey, kind: type[_View]) -> _View | None:
        """One object as a ``kind``; None when the cache does not hold it."""
        obj = self._store(resource).get(key)
        return None if obj is None else self.view(resource, obj, kind)

    def pods(self, namespace: str | None = None) -> list[Pod]:
        return self.views(r.POD, Pod, namespace)

    def pod_group(self, namespace: str, group: str) -> list[Pod]:
        """The managed pods of one pod group (label ``kueue.x-k8s.io/pod-group-name``)."""
        return [p for p in self.pods(namespace) if p.labels.get(constants.POD_GROUP_NAME_LABEL) == group]

    def workload(self, namespace: str, name: str) -> WorkloadRecord | None:
        return self.viewed(r.WORKLOAD, ObjectKey(namespace, name), WorkloadRecord)

    def workloads(self, namespace: str | None = None) -> list[WorkloadRecord]:
        return self.views(r.WORKLOAD, WorkloadRecord, namespace)

    def typed_workload(self, workload: WorkloadRecord) -> model.Workload:
        """The typed Workload of ``workload``: decoded once per version stored, then shared (a Workload that is not
        the stored one, an older version or one never stored, is decoded each time). Raises ``wire.InvalidObject``."""
        raw, key = workload.raw, workload.key
        memo = self._typed.get(key)
        if memo is not None and memo[0] is raw:
            return memo[1]
        typed = model.decode_workload(raw)
        if self._stores.get(r.WORKLOAD, {}).get(key) is raw:
            self._typed[key] = (raw, typed)
        return typed

    def view(self, resource: Resource, obj: Object, kind: type[_View]) -> _View:
        """``obj`` read through its typed view, a ``kind`` (``webhook.api.views``): made once per version stored,
        then shared until that object changes (an object that is not the stored one is viewed each time). Asked
        as a narrower kind than remembered (a ``BatchJob`` of a generic ``ObjectView``), the narrower is kept."""
        memo = self._views.get(id(obj))
        if memo is not None and memo.raw is obj:
            if isinstance(memo, kind):
                return memo
            view = view_of(kind, memo)
        else:
            view = kind.of(obj)
        store, key = self._stores.get(resource, {}), view.key
        if store.get(key) is obj:
            self._views[id(obj)] = view
            # Review workers ask (``workload``, ``pod_defaults``) from a thread of their own: when the loop replaced
            # the object meanwhile, and forgot its views before this one was remembered, this one goes now.
            if store.get(key) is not obj:
                self._views.pop(id(obj), None)
        return view

    def _forget_view(self, change: Change, quiet: bool) -> None:
        if change.old is not None:
            self._views.pop(id(change.old), None)

    def workloads_owned_by(self, uid: str) -> list[WorkloadRecord]:
        """Workloads whose ownerReferences name this uid (a Job's, a Pod's)."""
        store = self._store(r.WORKLOAD)
        keys = sorted(self._workloads_by_owner.get(uid, ()))
        return [self.view(r.WORKLOAD, store[key], WorkloadRecord) for key in keys if key in store]

    def cluster_queue(self, name: str) -> ObjectView | None:
        return self.viewed(r.CLUSTER_QUEUE, ObjectKey("", name), ObjectView)

    def cluster_queues(self) -> list[ObjectView]:
        return self.views(r.CLUSTER_QUEUE, ObjectView)

    def cohort(self, name: str) -> ObjectView | None:
        return self.viewed(r.COHORT, ObjectKey("", name), ObjectView) if r.COHORT in self._stores else None

    def cohorts(self) -> list[ObjectView]:
        return self.views(r.COHORT, ObjectView) if r.COHORT in self._stores else []

    def local_queue(self, namespace: str, name: str) -> ObjectView | None:
        return self.viewed(r.LOCAL_QUEUE, ObjectKey(namespace, name), ObjectView)

    def local_queues(self, namespace: str | None = None) -> list[ObjectView]:
        return self.views(r.LOCAL_QUEUE, ObjectView, namespace)

    def resource_flavors(self) -> list[ObjectView]:
        return self.views(r.RESOURCE_FLAVOR, ObjectView)

    def workload_priority_classes(self) -> list[PriorityClass]:
        return self.views(r.WORKLOAD_PRIORITY_CLASS, PriorityClass)

    def priority_classes(self) -> list[PriorityClass]:
        return self.views(r.PRIORITY_CLASS, PriorityClass)

    def pod_defaults(self, namespace: str) -> PodDefaults:
        """What the API server adds to pods in ``namespace`` (LimitRange defaults, RuntimeClass overhead)."""
        limit_ranges = list(self.items(r.LIMIT_RANGE, namespace)) if r.LIMIT_RANGE in self._stores else []
        classes = list(self.items(r.RUNTIME_CLASS)) if r.RUNTIME_CLASS in self._stores else []
        return PodDefaults(
            limit_ranges=[self.view(r.LIMIT_RANGE, lr, ObjectView) for lr in limit_ranges],
            overheads=runtime_overheads([self.view(r.RUNTIME_CLASS, rc, ObjectView) for rc in classes]),
        )

    # -- ClusterView (webhook.admission.view) ---------------------------------------------------

    def synced(self) -> bool:
        return len(self._synced) == len(self._stores)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        ns = self.get(r.NAMESPACE, ObjectKey("", name))
        return None if ns is None else labels_of(ns)

    def cohort_parents(self) -> Mapping[str, str | None]:
        # Views not kept (``view`` is for the reconciler's loop; review workers ask from a thread of their own).
        cohorts = map(ObjectView.of, self.items(r.COHORT)) if r.COHORT in self._stores else ()
        return {c.name: (c.spec.get("parentName") or None) for c in cohorts}

    def has_local_queue(self, namespace: str, name: str) -> bool:
        return self.get(r.LOCAL_QUEUE, ObjectKey(namespace, name)) is not None

    def has_workload_priority_class(self, name: str) -> bool:
        return self.get(r.WORKLOAD_PRIORITY_CLASS, ObjectKey("", name)) is not None

    def workload_is_admitted(self, namespace: str, name: str) -> bool:
        wl = self.get(r.WORKLOAD, ObjectKey(namespace, name))
        return wl is not None and self.is_admitted(wl)

    @staticmethod
    def is_admitted(wl: Object) -> bool:
        """Admitted, or (with no admission checks) holding a quota reservation with an admission."""
        return model.admitted(
            has_admission=model.raw_has_admission(wl),
            conditions=model.raw_conditions(wl),
            has_checks=bool((wl.get("status") or {}).get("admissionChecks")),
        )
