"""Descriptions of the resource kinds Turnstile reads and writes, and the URL paths they live at.

Owns: ``Resource`` (group, version, plural, kind, scope, status subresource) and one constant per kind.
Must not: do I/O. Path building is pure so the real client and tests share it.

A ``Resource`` is a ``NamedTuple``: it keys every store, index and work queue of the controller, and a tuple's
hash and equality run in C (a frozen dataclass's are Python calls: about a tenth of the calls one Job's walk from
creation to release made into our modules, ``bench.walk``). Nothing is cached on it: pickled to another process
(the webhook's review workers) it travels as its fields and hashes there with that process's string hashes.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import quote

from webhook.api import constants


class Resource(NamedTuple):
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    has_status: bool = False  # has a /status subresource: the main endpoint ignores status writes

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, *, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """The URL path of the collection (no name) or of one object, optionally across all namespaces.

        A namespaced collection without a namespace is the cluster-wide list/watch endpoint.
        """
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [root]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        elif not self.namespaced and namespace:
            raise ValueError(f"{self} is cluster-scoped; got namespace {namespace!r}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"empty name for {self}")
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return "/".join(parts)


JOB = Resource("batch", "v1", "jobs", "Job", namespaced=True, has_status=True)
POD = Resource("", "v1", "pods", "Pod", namespaced=True, has_status=True)
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", namespaced=False, has_status=True)
CONFIG_MAP = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
EVENT = Resource("", "v1", "events", "Event", namespaced=True)
PRIORITY_CLASS = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
LIMIT_RANGE = Resource("", "v1", "limitranges", "LimitRange", namespaced=True)
RUNTIME_CLASS = Resource("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", namespaced=False)
SUBJECT_ACCESS_REVIEW = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)

_KUEUE = constants.GROUP, constants.VERSION
RESOURCE_FLAVOR = Resource(*_KUEUE, "resourceflavors", "ResourceFlavor", namespaced=False)
CLUSTER_QUEUE = Resource(*_KUEUE, "clusterqueues", "ClusterQueue", namespaced=False, has_status=True)
LOCAL_QUEUE = Resource(*_KUEUE, "localqueues", "LocalQueue", namespaced=True, has_status=True)
WORKLOAD = Resource(*_KUEUE, "workloads", "Workload", namespaced=True, has_status=True)
WORKLOAD_PRIORITY_CLASS = Resource(*_KUEUE, "workloadpriorityclasses", "WorkloadPriorityClass", namespaced=False)
COHORT = Resource(*_KUEUE, "cohorts", "Cohort", namespaced=False, has_status=True)
CUSTOM_RESOURCE_DEFINITION = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
    has_status=True,
)
# Our kinds, in the order ``turnstile migrate-storage`` rewrites them (what a Workload names exists first).
KUEUE_KINDS = (RESOURCE_FLAVOR, WORKLOAD_PRIORITY_CLASS, COHORT, CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD)
