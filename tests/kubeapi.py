"""The tests' own reads and writes over one keep-alive HTTPS connection, with resources named as kubectl names them.

A kubectl process costs about 90 ms of CPU on a 2-core machine (the Go runtime starting, the kubeconfig, the
discovery cache) and the test helpers used one per call, polling included: 1,820 processes and 180 s of CPU in one
``make test``, a quarter of the suite's. Here each cluster gets one ``LocalClient`` and one aggregated discovery
read, which resolves ``job``, ``cq``, ``workloads.kueue.x-k8s.io`` or ``localqueues.v1beta2.kueue.x-k8s.io`` to a
path the way kubectl does (the core group first, then the groups in the server's order, each at its preferred
version unless the name gives one). The requests are those kubectl sends (a server-side apply is a PATCH with
fieldManager ``kubectl``), so the server sees the same. kubectl stays where the test is about what a user types.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

from webhook.local.client import ApiError, LocalClient
from webhook.local.cluster import LocalCluster

JSON = dict[str, Any]
# Aggregated discovery (apidiscovery.k8s.io/v2): every group, version and resource in one response per root.
DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
_VERSION = re.compile(r"v\d+(?:(?:alpha|beta)\d+)?")


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    names: frozenset[str]  # plural, singular, kind in lower case, short names
    preferred: bool  # the group's preferred version

    def path(self, name: str = "", namespace: str | None = None, subresource: str = "") -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        where = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return "/".join(part for part in (root + where, self.plural, name, subresource) if part)


class KubeApi:
    """One cluster's API, as the tests use it (thread-safe: the client keeps one connection per thread)."""

    def __init__(self, client: LocalClient) -> None:
        self.client = client
        self._resources: list[Resource] | None = None
        self._lock = threading.Lock()

    def resource(self, name: str) -> Resource:
        """The resource kubectl would pick for ``name`` (``resource[.version][.group]``); discovery is read again
        once when nothing matches (a CRD installed since)."""
        wanted, version, group = _parse(name)
        for fresh in (False, True):
            found = [r for r in self._discovered(fresh) if _matches(r, wanted, version, group)]
            if found:
                # Preferred versions first, as kubectl; the discovery order (core first) after that.
                return min(found, key=lambda r: not r.preferred)
        raise LookupError(f"the server has no resource {name!r}")

    def of(self, obj: JSON) -> Resource:
        """The resource of an object by its apiVersion and kind."""
        group, _, version = str(obj["apiVersion"]).rpartition("/")
        for fresh in (False, True):
            for r in self._discovered(fresh):
                if r.group == group and r.version == version and r.kind == obj["kind"]:
                    return r
        raise LookupError(f"the server has no {obj['apiVersion']} {obj['kind']}")

    def get(self, kind: str, name: str, namespace: str | None = None) -> JSON:
        return self.client.get(self.resource(kind).path(name, namespace))

    def maybe_get(self, kind: str, name: str, namespace: str | None = None) -> JSON | None:
        """The object, or None when it does not exist (any other error raises)."""
        try:
            return self.get(kind, name, namespace)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def list(self, kind: str, namespace: str | None = None, *, selector: str = "") -> list[JSON]:
        """The items, with their apiVersion and kind filled in as ``kubectl get -o json`` prints them."""
        resource = self.resource(kind)
        query = "?" + urllib.parse.urlencode({"labelSelector": selector}) if selector else ""
        found = self.client.get(resource.path(namespace=namespace) + query)
        api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
        return [{"apiVersion": api_version, "kind": resource.kind} | item for item in found.get("items") or []]

    def apply(self, obj: JSON) -> JSON:
        """``kubectl apply --server-side``: the object as an apply patch, field manager ``kubectl``, no force."""
        resource = self.of(obj)
        path = resource.path(obj["metadata"]["name"], _namespace_of(obj, resource))
        query = "?fieldManager=kubectl&fieldValidation=Strict"
        return self.client.request("PATCH", path + query, obj, content_type="application/apply-patch+yaml")

    def merge_patch(
        self, kind: str, name: str, change: JSON, namespace: str | None = None, *, subresource: str = ""
    ) -> JSON:
        """``kubectl patch --type=merge`` (with ``--subresource`` when given)."""
        path = self.resource(kind).path(name, namespace, subresource)
        return self.client.merge_patch(path + "?fieldManager=kubectl-patch", change)

    def create(self, obj: JSON) -> JSON:
        resource = self.of(obj)
        return self.client.create(resource.path(namespace=_namespace_of(obj, resource)), obj)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        """Deletes without waiting (``--wait=false``); a missing object is no error."""
        try:
            self.client.delete(self.resource(kind).path(name, namespace))
        except ApiError as e:
            if e.status != 404:
                raise

    def _discovered(self, fresh: bool) -> list[Resource]:
        with self._lock:
            if self._resources is None or fresh:
                self._resources = [r for root in ("/api", "/apis") for r in self._discover(root)]
            return self._resources

    def _discover(self, root: str) -> list[Resource]:
        found: list[Resource] = []
        listing = self.client.request("GET", root, accept=DISCOVERY)
        for group in listing.get("items") or []:
            name = group.get("metadata", {}).get("name", "")
            for i, version in enumerate(group.get("versions") or []):
                for r in version.get("resources") or []:
                    kind = (r.get("responseKind") or {}).get("kind", "")
                    names = {r["resource"], r.get("singularResource", ""), kind.lower(), *(r.get("shortNames") or [])}
                    found.append(
                        Resource(
                            group=name,
                            version=version["version"],
                            plural=r["resource"],
                            kind=kind,
                            namespaced=r.get("scope") == "Namespaced",
                            names=frozenset(n for n in names if n),
                            preferred=i == 0,
                        )
                    )
        return found


def _namespace_of(obj: JSON, resource: Resource) -> str | None:
    """The object's namespace; kubectl's default one for a namespaced object that names none."""
    return obj["metadata"].get("namespace") or ("default" if resource.namespaced else None)


def _parse(name: str) -> tuple[str, str, str]:
    """``resource[.version][.group]`` → (resource, version or "", group or "*" for any)."""
    resource, _, rest = name.partition(".")
    if not rest:
        return resource, "", "*"
    first, _, more = rest.partition(".")
    if more and _VERSION.fullmatch(first):
        return resource, first, more
    return resource, "", rest


def _matches(r: Resource, wanted: str, version: str, group: str) -> bool:
    return wanted in r.names and (group == "*" or r.group == group) and (not version or r.version == version)


_apis: dict[tuple[str, str], KubeApi] = {}
_apis_lock = threading.Lock()


def api(cluster: LocalCluster) -> KubeApi:
    """The cluster's KubeApi, made once per cluster (by its server and kubeconfig) and kept for the session."""
    key = (cluster.server, str(cluster.kubeconfig))
    with _apis_lock:
        found = _apis.get(key)
        if found is None:
            found = _apis[key] = KubeApi(LocalClient(cluster))
        return found
