"""The ``Kube`` protocol: everything Turnstile asks of the API server, on plain JSON dicts.

Owns: the contract both implementations honour (``apiserver.ApiServerKube`` for real clusters,
``tests.doubles.fakekube.FakeKube`` for unit tests, held to the same contract by ``tests/contract/``).
Every method raises only ``webhook.kube.errors.KubeError`` subclasses.
Must not: mention any client library type.

Conventions shared by all methods:
- ``namespace`` is required for namespaced kinds and must be None for cluster-scoped ones; for writes that
  carry a body it defaults to the body's ``metadata.namespace``.
- ``dry_run=True`` sends ``dryRun=All``: the server validates and admits, returns what it would store, and
  persists nothing.
- ``watch`` is an async generator; close it with ``contextlib.aclosing`` so its connection is released.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Protocol

from webhook.kube.objects import (
    JsonPatch,
    MergePatch,
    Object,
    ObjectList,
    PatchType,
    PropagationPolicy,
    WatchEvent,
)
from webhook.kube.resources import Resource


class Kube(Protocol):
    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> Object:
        """The object, or ``NotFound``."""
        ...

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
        """Every matching object (all pages) and the collection's resourceVersion.

        A namespaced kind without ``namespace`` lists across all namespaces. ``without_managed_fields``: each
        item's ``metadata.managedFields`` is dropped as its page arrives (for a cache: nobody reads them, they are
        about half of a Workload, and a list that held them whole would set the process's peak memory). ``each``:
        every item is replaced by ``each(item)`` as its page arrives, after that (a cache's own compact copy, so
        the decoded pages are let go one by one instead of all being held until the list ends).
        """
        ...

    def watch(
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
        """Changes after ``resource_version`` until the server ends the stream (``timeout_seconds``).

        Raises ``Gone`` when ``resource_version`` is too old (list again), ``Retryable`` when the
        connection breaks. A watch that simply ends is normal: watch again from the last version seen.
        """
        ...

    async def create(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        """The created object. Honours ``metadata.generateName``; ``AlreadyExists`` when the name is taken."""
        ...

    async def replace(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        """Replace the whole object (not its status, for kinds with a status subresource).

        ``Conflict`` when ``metadata.resourceVersion`` is not the stored one.
        """
        ...

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
        """Merge patch (RFC 7386) or JSON patch (RFC 6902, may ``test`` fields as preconditions).

        A merge patch that sets ``metadata.resourceVersion`` is applied only to that version (else
        ``Conflict``).
        """
        ...

    async def replace_status(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        """Replace only ``status`` through the status subresource; ``Conflict`` on a stale resourceVersion."""
        ...

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
        """Patch only ``status`` through the status subresource."""
        ...

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
        """Delete, only if ``uid``/``resource_version`` still match (else ``Conflict``).

        Returns the object as the server last stored it (``metadata.deletionTimestamp`` set when finalizers
        or foreground deletion keep it around), or None when the server answered with a bare ``Status``.
        """
        ...
