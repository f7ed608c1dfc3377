"""``ApiServerKube``: the ``Kube`` protocol over a real API server, through kubernetes_asyncio.

Owns: configuration loading (kubeconfig file or in-cluster service account), the one aiohttp session,
request building, JSON decoding with orjson, and turning every client exception into ``webhook.kube.errors``.
Must not: hand any kubernetes_asyncio or aiohttp type to its callers.

Why the generic ``ApiClient.call_api`` with ``_preload_content=False``: one code path serves every kind
(CRDs included) and the bytes go straight to orjson, never through the generated model classes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import aiohttp
import orjson
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from webhook.kube import slimclient
from webhook.kube.errors import KubeError, Retryable, error_from_status
from webhook.kube.objects import (
    EventType,
    JsonPatch,
    MergePatch,
    Object,
    ObjectList,
    PatchType,
    PropagationPolicy,
    WatchEvent,
)
from webhook.kube.resources import Resource

if TYPE_CHECKING:
    from kubernetes_asyncio import client as k8s_client
    from kubernetes_asyncio import config as k8s_config
    from kubernetes_asyncio.client.exceptions import ApiException
else:
    k8s_client, k8s_config = slimclient.load()
    ApiException = k8s_client.ApiException

_PATCH_CONTENT_TYPES: dict[PatchType, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}
_WATCH_EVENT_TYPES: frozenset[str] = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
Query = list[tuple[str, str]]
# Kueue's writes show as kueue's managers; ours as "turnstile" (the generated client's default said
# "OpenAPI-Generator", which told a user reading managedFields nothing).
USER_AGENT = "turnstile"


class ApiServerKube:
    """The real client. Use as ``async with ApiServerKube(kubeconfig=path) as kube: ...``.

    Exactly one of ``kubeconfig`` and ``in_cluster=True`` selects the credentials.
    """

    def __init__(
        self,
        *,
        kubeconfig: Path | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        request_timeout: float = 30.0,
        page_size: int = 500,
        user_agent: str = USER_AGENT,
    ) -> None:
        """``user_agent``: what the API server's audit log shows, and (up to its first ``/``) the manager our
        writes are recorded under in an object's ``managedFields``."""
        if (kubeconfig is None) == (not in_cluster):
            raise ValueError("give exactly one of kubeconfig=... or in_cluster=True")
        self._kubeconfig = kubeconfig
        self._context = context
        self._in_cluster = in_cluster
        self._request_timeout = request_timeout
        self._page_size = page_size
        self._user_agent = user_agent
        self._api: Any = None

    async def __aenter__(self) -> Self:
        configuration = k8s_client.Configuration()
        if self._in_cluster:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            await k8s_config.load_kube_config(
                config_file=str(self._kubeconfig),
                context=self._context,
                client_configuration=configuration,
                persist_config=False,
            )
        self._api = _JsonApiClient(configuration=configuration)
        self._api.user_agent = self._user_agent
        _resolve_proxy_once(self._api)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        api, self._api = self._api, None
        if api is not None:
            await api.close()
            # Connections closed by a cancelled request (a watch stopped mid-stream) finish their TLS shutdown on
            # later loop iterations; without this pause a loop that ends right after us leaks their sockets.
            await asyncio.sleep(0.1)

    @property
    def server(self) -> str:
        """The base URL requests go to."""
        return str(self._require_api().configuration.host)

    # -- requests -------------------------------------------------------------------------------

    def _require_api(self) -> Any:
        if self._api is None:
            raise RuntimeError("ApiServerKube is used outside `async with`")
        return self._api

    async def _open(
        self,
        method: str,
        path: str,
        *,
        query: Query,
        body: Any = None,
        content_type: str = "application/json",
        client_timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Send a request; the caller reads and releases the response. Raises ``Retryable``/``KubeError``."""
        api = self._require_api()
        try:
            response: aiohttp.ClientResponse = await api.call_api(
                path,
                method,
                query_params=query,
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=client_timeout,
            )
        except (aiohttp.ClientError, TimeoutError) as e:
            raise Retryable(f"{method} {path}: {e!r}") from e
        except ApiException as e:
            raise KubeError(f"{method} {path}: {e.reason}", status=e.status or None) from e
        if not 200 <= response.status < 300:
            try:
                data = await response.read()
            except (aiohttp.ClientError, TimeoutError) as e:
                raise Retryable(f"{method} {path}: {response.status}, body unreadable: {e!r}") from e
            finally:
                response.release()
            raise error_from_status(response.status, _status_body(data))
        return response

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        timeout = aiohttp.ClientTimeout(total=self._request_timeout)
        response = await self._open(
            method, path, query=query or [], body=body, content_type=content_type, client_timeout=timeout
        )
        try:
            data = await response.read()
        except (aiohttp.ClientError, TimeoutError) as e:
            raise Retryable(f"{method} {path}: {e!r}") from e
        finally:
            response.release()
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise KubeError(f"{method} {path}: response is not JSON: {data[:200]!r}") from e

    # -- the Kube protocol ----------------------------------------------------------------------

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> Object:
        obj: Object = await self._call("GET", resource.path(namespace=namespace, name=name))
        return obj

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
        path = resource.path(namespace=namespace)
        base = [*_selectors(label_selector, field_selector), ("limit", str(self._page_size))]
        items: list[Object] = []
        version = ""
        token = ""
        while True:
            query = base + ([("continue", token)] if token else [])
            page = await self._call("GET", path, query=query)
            meta = page.get("metadata") or {}
            # Every page is served from the snapshot of the first one; its version is the list's.
            version = version or str(meta.get("resourceVersion") or "")
            for item in page.get("items") or []:
                # Items of a list carry no kind/apiVersion; fill them so objects look the same everywhere.
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                if without_managed_fields:
                    (item.get("metadata") or {}).pop("managedFields", None)
                items.append(item if each is None else each(item))
            token = meta.get("continue") or ""
            if not token:
                return ObjectList(items, version)

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
        query = [("watch", "true"), ("resourceVersion", resource_version)]
        query += _selectors(label_selector, field_selector)
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if timeout_seconds is not None:
            query.append(("timeoutSeconds", str(timeout_seconds)))
        # No total timeout: the server ends the stream. A silent connection (no bytes, not even the
        # bookmarks the server sends about once a minute) for longer than the server's own timeout is dead.
        read_timeout = (timeout_seconds or 1800) + 30.0
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._request_timeout, sock_read=read_timeout)
        path = resource.path(namespace=namespace)
        response = await self._open("GET", path, query=query, client_timeout=timeout)
        try:
            async for line in response.content:
                if not line.strip():
                    continue
                yield _watch_event(line, path)
        except (aiohttp.ClientError, TimeoutError) as e:
            raise Retryable(f"watch {path}: {e!r}") from e
        finally:
            response.release()

    async def create(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        path = resource.path(namespace=_namespace(resource, body, namespace))
        obj: Object = await self._call("POST", path, query=_dry_run(dry_run), body=body)
        return obj

    async def replace(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        path = resource.path(namespace=_namespace(resource, body, namespace), name=_name(body))
        obj: Object = await self._call("PUT", path, query=_dry_run(dry_run), body=body)
        return obj

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
        path = resource.path(namespace=namespace, name=name)
        obj: Object = await self._call(
            "PATCH", path, query=_dry_run(dry_run), body=patch, content_type=_PATCH_CONTENT_TYPES[patch_type]
        )
        return obj

    async def replace_status(
        self,
        resource: Resource,
        body: Object,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        path = resource.path(namespace=_namespace(resource, body, namespace), name=_name(body), subresource="status")
        obj: Object = await self._call("PUT", path, query=_dry_run(dry_run), body=body)
        return obj

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
        path = resource.path(namespace=namespace, name=name, subresource="status")
        obj: Object = await self._call(
            "PATCH", path, query=_dry_run(dry_run), body=patch, content_type=_PATCH_CONTENT_TYPES[patch_type]
        )
        return obj

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
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if dry_run:
            options["dryRun"] = ["All"]
        path = resource.path(namespace=namespace, name=name)
        obj: Object = await self._call("DELETE", path, query=_dry_run(dry_run), body=options)
        return None if obj.get("kind") == "Status" else obj


def _selectors(label_selector: str | None, field_selector: str | None) -> Query:
    query: Query = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


def _dry_run(dry_run: bool) -> Query:
    return [("dryRun", "All")] if dry_run else []


def _namespace(resource: Resource, body: Object, namespace: str | None) -> str | None:
    if not resource.namespaced:
        return None
    found = namespace or (body.get("metadata") or {}).get("namespace")
    if not found:
        raise ValueError(f"{resource} needs a namespace")
    return str(found)


def _name(body: Object) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("the body has no metadata.name")
    return str(name)


def _status_body(data: bytes) -> dict[str, Any] | None:
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {"message": data[:500].decode("utf-8", "replace")}
    return body if isinstance(body, dict) else None


def _watch_event(line: bytes, path: str) -> WatchEvent:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise Retryable(f"watch {path}: undecodable line {line[:200]!r}") from e
    kind, obj = event.get("type"), event.get("object") or {}
    if kind == "ERROR":
        # The server reports an expired resourceVersion as an ERROR event carrying a 410 Status.
        raise error_from_status(int(obj.get("code") or 500), obj)
    if kind not in _WATCH_EVENT_TYPES:
        raise KubeError(f"watch {path}: unknown event type {kind!r}")
    event_type: EventType = kind
    return WatchEvent(event_type, obj)


class _JsonApiClient(k8s_client.ApiClient):
    """Our request bodies, query and headers are JSON already (dicts, lists, strings and numbers, from the wire or
    built like it): the generated client's recursive ``sanitize_for_serialization``, written for its model classes,
    only copied them, a third of the request CPU of the reconciler in the baseline benchmark's profile."""

    def sanitize_for_serialization(self, obj: Any) -> Any:
        return obj


def _resolve_proxy_once(api: Any) -> None:
    """The client's session trusts the environment for proxies, so every request looked its proxy up in a thread
    (``asyncio.to_thread``: a thread hop and the proxy variables parsed, as much CPU in the reconciler as the
    admission writes themselves). The API server's address does not change: with no proxy for it, the session is
    swapped for one that does not look; with one, the lookups stay (the proxy's credentials come from it)."""
    rest = api.rest_client
    if rest.proxy:
        return
    try:
        get_env_proxy_for_url(URL(str(api.configuration.host)))
    except LookupError:
        old: aiohttp.ClientSession = rest.pool_manager
        connector = old.connector
        old.detach()  # the connector (its pool, its TLS context) moves to the new session; read buffer as before
        rest.pool_manager = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=2**21)
