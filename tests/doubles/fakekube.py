"""``FakeKube``: an in-memory API server implementing the ``Kube`` protocol, for unit tests.

Owns: a faithful-enough imitation of the server's storage semantics — increasing resourceVersions, optimistic
concurrency (``Conflict``), status subresources kept apart from the main endpoint, ``generateName``,
uid/creationTimestamp/generation, finalizers and deletionTimestamp, owner-reference garbage collection,
label/field selectors, watches (with bookmarks, ``timeoutSeconds`` and ``Gone`` for compacted versions), dry
run, and scripted failures through ``faults``.
Must not: be imported by production code. Its fidelity is proven, not assumed: ``tests/contract/`` runs one suite
against it and against the real API server.

Test controls beyond the protocol: ``faults.fail_next(...)``, ``compact()``, ``bookmark()``,
``break_watches()``, ``objects(resource)`` and the ``actions`` log of successful writes.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

import orjson

from tests.doubles import selectors
from tests.doubles.faults import FaultPlan, raised
from tests.doubles.patches import apply_patch
from webhook.api import constants
from webhook.kube.errors import AlreadyExists, Conflict, Gone, Invalid, KubeError, NotFound, Retryable
from webhook.kube.objects import (
    JsonPatch,
    MergePatch,
    Object,
    ObjectKey,
    ObjectList,
    PatchType,
    PropagationPolicy,
    WatchEvent,
    key_of,
)
from webhook.kube.resources import JOB, NAMESPACE, Resource

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the server's: no vowels, no look-alikes
ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]


class Action(NamedTuple):
    """One successful (non-dry-run) write, in order, for tests to assert on."""

    verb: str
    resource: Resource
    key: ObjectKey


class _Change(NamedTuple):
    version: int
    resource: Resource
    type: ChangeType
    old: Object | None
    new: Object


@dataclass(eq=False)
class _Watcher:
    resource: Resource
    namespace: str | None
    labels: selectors.Predicate
    fields: Callable[[dict[str, Any]], bool]
    bookmarks: bool
    queue: asyncio.Queue[WatchEvent | KubeError] = field(default_factory=asyncio.Queue)

    def _matches(self, obj: Object | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return self.labels(meta.get("labels") or {}) and self.fields(obj)

    def offer(self, change: _Change) -> None:
        # Like the server's watch cache: an object entering the selection is ADDED, leaving it DELETED.
        if change.resource != self.resource:
            return
        was, now = self._matches(change.old), self._matches(change.new)
        if change.type == "DELETED":
            kind: ChangeType | None = "DELETED" if was else None
        elif was and now:
            kind = "MODIFIED"
        elif now:
            kind = "ADDED"
        elif was:
            kind = "DELETED"
        else:
            kind = None
        if kind is not None:
            self.queue.put_nowait(WatchEvent(kind, _copy(change.new)))


def _copy(obj: Any) -> Any:
    # A JSON round trip: independent copies, and anything not JSON-serializable fails here as on the wire.
    return orjson.loads(orjson.dumps(obj))


def _meta(obj: Object) -> dict[str, Any]:
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


class FakeKube:
    def __init__(
        self,
        *,
        clock: Callable[[], datetime] | None = None,
        seed: int = 0,
        history_limit: int = 10_000,
        garbage_collect: bool = True,
    ) -> None:
        self.faults = FaultPlan()
        self.actions: list[Action] = []
        self._clock = clock or (lambda: datetime.now(UTC))
        self._random = random.Random(seed)
        self._history_limit = history_limit
        self._garbage_collect = garbage_collect
        self._objects: dict[Resource, dict[ObjectKey, Object]] = {}
        self._version = 0
        self._history: deque[_Change] = deque()
        self._compacted = 0  # changes at or below this version are no longer in the history
        self._watchers: set[_Watcher] = set()

    # -- test controls --------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return str(self._version)

    def objects(self, resource: Resource) -> list[Object]:
        return [_copy(obj) for obj in self._objects.get(resource, {}).values()]

    def compact(self) -> None:
        """Forget the change history, as etcd compaction does: watches from older versions get ``Gone``."""
        self._history.clear()
        self._compacted = self._version

    def bookmark(self) -> None:
        """Send every watch that allows bookmarks a BOOKMARK at the current resourceVersion."""
        for watcher in self._watchers:
            if watcher.bookmarks:
                obj = {
                    "kind": watcher.resource.kind,
                    "apiVersion": watcher.resource.api_version,
                    "metadata": {"resourceVersion": self.resource_version},
                }
                watcher.queue.put_nowait(WatchEvent("BOOKMARK", obj))

    def break_watches(self, error: KubeError | None = None) -> int:
        """End every open watch with ``error`` (default: a dropped connection). Returns how many."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(error or Retryable("injected: connection reset"))
        return len(self._watchers)

    # -- reads ----------------------------------------------------------------------------------

    def _check(self, verb: str, resource: Resource, name: str | None) -> bool:
        """Raise an injected failure; True when the failure must come after the write is stored."""
        fault = self.faults.take(verb, resource, name)
        if fault is None:
            return False
        if fault.applied:
            return True
        raise raised(fault)

    def _key(self, resource: Resource, name: str, namespace: str | None) -> ObjectKey:
        if resource.namespaced and not namespace:
            raise ValueError(f"{resource} is namespaced: give a namespace")
        if not resource.namespaced and namespace:
            raise ValueError(f"{resource} is cluster-scoped; got namespace {namespace!r}")
        return ObjectKey(namespace or "", name)

    def _stored(self, resource: Resource, key: ObjectKey) -> Object:
        found = self._objects.get(resource, {}).get(key)
        if found is None:
            raise NotFound(f'404 NotFound: {resource} "{key}" not found', status=404, reason="NotFound")
        return found

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> Object:
        self._check("get", resource, name)
        found: Object = _copy(self._stored(resource, self._key(resource, name, namespace)))
        return found

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        without_managed_fields: bool = False,
        each: Callable[[Object], Object] | None = None,
    ) -> ObjectList:
        self._check("list", resource, None)
        labels = selectors.parse_label_selector(label_selector)
        fields = selectors.parse_field_selector(field_selector)
        items = [
            _copy(obj)
            for key, obj in sorted(self._objects.get(resource, {}).items())
            if (not namespace or key.namespace == namespace) and labels(_meta(obj).get("labels") or {}) and fields(obj)
        ]
        if without_managed_fields:  # the fake records none; dropped anyway, should a test have stored some
            for item in items:
                _meta(item).pop("managedFields", None)
        return ObjectList(items if each is None else [each(item) for item in items], self.resource_version)

    async def watch(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
    ) -> AsyncGenerator[WatchEvent, None]:
        self._check("watch", resource, None)
        watcher = _Watcher(
            resource=resource,
            namespace=namespace,
            labels=selectors.parse_label_selector(label_selector),
            fields=selectors.parse_field_selector(field_selector),
            bookmarks=allow_bookmarks,
        )
        start = int(resource_version or "0")
        if start == 0:
            # "Any version": the server starts with a synthetic ADDED for every current object.
            for obj in self._objects.get(resource, {}).values():
                watcher.offer(_Change(self._version, resource, "ADDED", None, obj))
        elif start < self._compacted:
            raise Gone(
                f"410 Expired: too old resource version: {start} ({self._compacted})",
                status=410,
                reason="Expired",
            )
        else:
            for change in self._history:
                if change.version > start:
                    watcher.offer(change)
        self._watchers.add(watcher)
        loop = asyncio.get_running_loop()
        deadline = None if timeout_seconds is None else loop.time() + timeout_seconds
        try:
            while True:
                remaining = None if deadline is None else deadline - loop.time()
                if remaining is not None and remaining <= 0:
                    return
                # asyncio.timeout, not wait_for: in Python 3.11 wait_for loses a cancellation that arrives as the
                # item does, and the watch would then outlive the task that was told to stop.
                try:
                    async with asyncio.timeout(remaining):
                        item = await watcher.queue.get()
                except TimeoutError:
                    return
                if isinstance(item, KubeError):
                    raise item
                yield item
        finally:
            self._watchers.discard(watcher)

    # -- storage --------------------------------------------------------------------------------

    def _record(self, resource: Resource, kind: ChangeType, old: Object | None, new: Object) -> Object:
        """Store ``new`` (or remove it, for DELETED) at a fresh resourceVersion and tell the watches."""
        self._version += 1
        _meta(new)["resourceVersion"] = str(self._version)
        key = key_of(new)
        bucket = self._objects.setdefault(resource, {})
        if kind == "DELETED":
            bucket.pop(key, None)
        else:
            bucket[key] = new
        change = _Change(self._version, resource, kind, old, new)
        self._history.append(change)
        while len(self._history) > self._history_limit:
            self._compacted = self._history.popleft().version
        for watcher in self._watchers:
            watcher.offer(change)
        return new

    def _finish_write(
        self, verb: str, resource: Resource, key: ObjectKey, result: Object, *, fail_after: bool
    ) -> Object:
        self.actions.append(Action(verb, resource, key))
        if fail_after:
            raise Retryable("injected: timed out after the write was applied", status=504)
        out: Object = _copy(result)
        return out

    def _check_version(self, body: Object, stored: Object, resource: Resource) -> None:
        wanted = _meta(body).get("resourceVersion")
        if wanted and wanted != _meta(stored).get("resourceVersion"):
            raise Conflict(
                f'409 Conflict: Operation cannot be fulfilled on {resource} "{key_of(stored)}": '
                "the object has been modified; please apply your changes to the latest version and try again",
                status=409,
                reason="Conflict",
            )

    # -- writes ---------------------------------------------------------------------------------

    async def create(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        new: Object = _copy(body)
        meta = _meta(new)
        if resource.namespaced:
            meta["namespace"] = namespace or meta.get("namespace")
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise Invalid("422 Invalid: metadata.name or generateName is required", status=422)
            meta["name"] = prefix + "".join(self._random.choices(_NAME_SUFFIX_ALPHABET, k=5))
        key = self._key(resource, meta["name"], meta.get("namespace"))
        fail_after = self._check("create", resource, key.name)
        if key in self._objects.get(resource, {}):
            raise AlreadyExists(
                f'409 AlreadyExists: {resource} "{key}" already exists', status=409, reason="AlreadyExists"
            )
        if meta.get("resourceVersion"):
            raise Invalid("422 Invalid: resourceVersion should not be set on objects to be created", status=422)
        new["apiVersion"], new["kind"] = resource.api_version, resource.kind
        meta["uid"] = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        meta["creationTimestamp"] = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        meta["generation"] = 1
        for transient in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(transient, None)
        if resource.has_status:
            new.pop("status", None)  # the main endpoint never writes status
        if dry_run:
            return new
        self._record(resource, "ADDED", None, new)
        return self._finish_write("create", resource, key, new, fail_after=fail_after)

    def _update(
        self,
        verb: str,
        resource: Resource,
        key: ObjectKey,
        compute: Callable[[Object], Object],
        *,
        status_only: bool,
        dry_run: bool,
    ) -> Object:
        """The shared update path: fault check, compute the new object, keep what the endpoint may not
        change, bump generation on spec changes, store (or finish a pending deletion)."""
        fail_after = self._check(verb, resource, key.name)
        stored = self._stored(resource, key)
        proposed = compute(_copy(stored))
        unconditional = verb.startswith("replace") and not _meta(proposed).get("resourceVersion")
        if unconditional and resource.group == constants.GROUP:
            # Custom resources (unlike built-in kinds) refuse an unconditional PUT.
            raise Invalid("422 Invalid: metadata.resourceVersion: must be specified for an update", status=422)
        self._check_version(proposed, stored, resource)
        new: Object = _copy(stored)
        if status_only:
            if "status" in proposed:
                new["status"] = proposed["status"]
            else:
                new.pop("status", None)
        else:
            new = proposed
            if resource.has_status:
                if "status" in stored:
                    new["status"] = _copy(stored["status"])
                else:
                    new.pop("status", None)
            meta, old_meta = _meta(new), _meta(stored)
            for fixed in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "generation"):
                if fixed in old_meta:
                    meta[fixed] = old_meta[fixed]
                else:
                    meta.pop(fixed, None)
            new["apiVersion"], new["kind"] = resource.api_version, resource.kind
            if _spec_of(new) != _spec_of(stored):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        _meta(new)["resourceVersion"] = _meta(stored)["resourceVersion"]
        if new == stored:
            # A no-op write: the server answers with the object and keeps its resourceVersion.
            return self._finish_write(verb, resource, key, stored, fail_after=fail_after)
        if dry_run:
            return new
        if _meta(new).get("deletionTimestamp") and not _meta(new).get("finalizers"):
            self._remove(resource, stored, new)
        else:
            self._record(resource, "MODIFIED", stored, new)
        return self._finish_write(verb, resource, key, new, fail_after=fail_after)

    async def replace(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        key = self._body_key(resource, body, namespace)
        return self._update("replace", resource, key, lambda _: _copy(body), status_only=False, dry_run=dry_run)

    async def replace_status(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        self._require_status(resource)
        key = self._body_key(resource, body, namespace)
        return self._update("replace_status", resource, key, lambda _: _copy(body), status_only=True, dry_run=dry_run)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: MergePatch | JsonPatch,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        dry_run: bool = False,
    ) -> Object:
        key = self._key(resource, name, namespace)
        return self._update(
            "patch",
            resource,
            key,
            lambda stored: apply_patch(stored, patch, json_patch=patch_type == "json"),
            status_only=False,
            dry_run=dry_run,
        )

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: MergePatch | JsonPatch,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        dry_run: bool = False,
    ) -> Object:
        self._require_status(resource)
        key = self._key(resource, name, namespace)
        return self._update(
            "patch_status",
            resource,
            key,
            lambda stored: apply_patch(stored, patch, json_patch=patch_type == "json"),
            status_only=True,
            dry_run=dry_run,
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        dry_run: bool = False,
    ) -> Object | None:
        key = self._key(resource, name, namespace)
        fail_after = self._check("delete", resource, name)
        stored = self._stored(resource, key)
        meta = _meta(stored)
        if (uid and uid != meta.get("uid")) or (resource_version and resource_version != meta["resourceVersion"]):
            raise Conflict(
                f'409 Conflict: Precondition failed for {resource} "{key}": '
                f"uid/resourceVersion in precondition: {uid}/{resource_version}, "
                f"in object meta: {meta.get('uid')}/{meta['resourceVersion']}",
                status=409,
                reason="Conflict",
            )
        if dry_run:
            preview: Object = _copy(stored)
            return preview
        policy = propagation_policy or ("Orphan" if resource == JOB else "Background")
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                result = stored
            else:
                lingering: Object = _copy(stored)
                _meta(lingering)["deletionTimestamp"] = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
                _meta(lingering)["deletionGracePeriodSeconds"] = 0
                result = self._record(resource, "MODIFIED", stored, lingering)
        else:
            result = self._remove(resource, stored, stored, policy=policy)
        return self._finish_write("delete", resource, key, result, fail_after=fail_after)

    def _remove(
        self, resource: Resource, stored: Object, final: Object, *, policy: PropagationPolicy = "Background"
    ) -> Object:
        """Remove the object for good, then collect or orphan its dependents like the garbage collector."""
        removed = self._record(resource, "DELETED", stored, _copy(final))
        if not self._garbage_collect:
            return removed
        uid = _meta(stored).get("uid")
        for kind, bucket in list(self._objects.items()):
            for dependent in list(bucket.values()):
                dep_meta = _meta(dependent)
                owned = [ref for ref in dep_meta.get("ownerReferences") or [] if ref.get("uid") == uid]
                in_namespace = resource == NAMESPACE and dep_meta.get("namespace") == key_of(stored).name
                if in_namespace or (owned and policy != "Orphan"):
                    if bucket.get(key_of(dependent)) is dependent:
                        self._collect(kind, dependent)
                elif owned:
                    orphan: Object = _copy(dependent)
                    _meta(orphan)["ownerReferences"] = [
                        ref for ref in dep_meta["ownerReferences"] if ref.get("uid") != uid
                    ]
                    self._record(kind, "MODIFIED", dependent, orphan)
        return removed

    def _collect(self, resource: Resource, dependent: Object) -> None:
        """Delete a dependent as the garbage collector does: finalizers keep it, marked for deletion."""
        if not _meta(dependent).get("finalizers"):
            self._remove(resource, dependent, dependent)
        elif not _meta(dependent).get("deletionTimestamp"):
            marked: Object = _copy(dependent)
            _meta(marked)["deletionTimestamp"] = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
            self._record(resource, "MODIFIED", dependent, marked)

    # -- helpers --------------------------------------------------------------------------------

    def _body_key(self, resource: Resource, body: Object, namespace: str | None) -> ObjectKey:
        meta = body.get("metadata") or {}
        if not meta.get("name"):
            raise ValueError("the body has no metadata.name")
        ns = (namespace or meta.get("namespace")) if resource.namespaced else None
        return self._key(resource, meta["name"], ns)

    @staticmethod
    def _require_status(resource: Resource) -> None:
        if not resource.has_status:
            raise NotFound(f"404 NotFound: {resource} has no status subresource", status=404, reason="NotFound")


def _spec_of(obj: Object) -> dict[str, Any]:
    """Everything but metadata and status: what ``metadata.generation`` counts changes of."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}
