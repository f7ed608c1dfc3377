"""Building a scheduling ``Snapshot`` from the API objects as plain dicts, for readers outside the reconciler.

Owns: ``SnapshotParser``, which parses ClusterQueues, ResourceFlavors, LocalQueues, Workloads and Namespaces
into a ``Snapshot`` and remembers each parsed Workload by resourceVersion (parsing is the costly part), and
which objects it had to skip as malformed. The visibility API, ``turnstile fit``/``why`` and the dashboard use it
so that they ask ``core.schedule`` exactly what the scheduler is asked.
Must not: do I/O, log, or decide anything; the reconciler's own snapshot (``controller.admitter``) also counts the
admissions it has assumed but not yet written, which no outside reader can see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from webhook.api.clusterqueue import parse_cluster_queue
from webhook.api.flavor import parse_resource_flavor
from webhook.api.localqueue import parse_local_queue
from webhook.api.workload import Workload, parse_workload
from webhook.core.snapshot import Snapshot

Obj = Mapping[str, Any]
T = TypeVar("T")


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class SnapshotParser:
    """Reusable across calls: a Workload whose resourceVersion did not change is not parsed again."""

    def __init__(self) -> None:
        self._workloads: dict[tuple[str, str], tuple[str, Workload | None]] = {}
        self.skipped: list[str] = []  # "Kind ns/name: why", of the last ``snapshot``

    def snapshot(
        self,
        *,
        cluster_queues: Iterable[Obj],
        flavors: Iterable[Obj],
        local_queues: Iterable[Obj],
        workloads: Iterable[Obj],
        namespaces: Iterable[Obj] = (),
    ) -> Snapshot:
        self.skipped = []
        parsed: list[Workload] = []
        live: set[tuple[str, str]] = set()
        for obj in workloads:
            key = _key(obj)
            live.add(key)
            meta = obj.get("metadata") or {}
            version = str(meta.get("resourceVersion", ""))
            cached = self._workloads.get(key)
            if cached is None or cached[0] != version or not version:
                cached = (version, self._parse(obj, "Workload", parse_workload))
                self._workloads[key] = cached
            wl = cached[1]
            if wl is None or (meta.get("deletionTimestamp") and wl.admission is None):
                continue  # malformed, or being deleted and never to be admitted (as the scheduler sees it)
            parsed.append(wl)
        for gone in set(self._workloads) - live:
            del self._workloads[gone]
        return Snapshot(
            cluster_queues=self._all(cluster_queues, "ClusterQueue", parse_cluster_queue),
            flavors=self._all(flavors, "ResourceFlavor", parse_resource_flavor),
            local_queues=self._all(local_queues, "LocalQueue", parse_local_queue),
            workloads=parsed,
            namespaces={
                str((ns.get("metadata") or {}).get("name", "")): dict((ns.get("metadata") or {}).get("labels") or {})
                for ns in namespaces
            },
        )

    def _parse(self, obj: Obj, kind: str, parse: Callable[[Obj], T]) -> T | None:
        try:
            return parse(obj)
        except ValueError as exc:
            namespace, name = _key(obj)
            self.skipped.append(f"{kind} {namespace + '/' if namespace else ''}{name}: {exc}")
            return None

    def _all(self, objs: Iterable[Obj], kind: str, parse: Callable[[Obj], T]) -> list[T]:
        return [p for p in (self._parse(o, kind, parse) for o in objs) if p is not None]
