"""What the scheduler decides on, kept from pass to pass: the cache's queues and unfinished Workloads, parsed.

Parsing is the costly part of a snapshot, so each object is parsed again only when its version changes, and the
Workload part is kept between passes, fed by the cache's journal (quiet changes too: they change the objects); the
whole of it is read again only after the journal overflowed. Admissions assumed in ``Reservations`` (decided, not
yet seen written) are shown as held. Alongside, the pending Workloads by LocalQueue and shape (``core.backlog``),
so a pass reads only each queue's front, and whether anything changed that could make the scheduler decide
otherwise than last time (``dirty``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from webhook.api.clusterqueue import parse_cluster_queue
from webhook.api.cohort import parse_cohort
from webhook.api.constants import COND_EVICTED
from webhook.api.flavor import parse_resource_flavor
from webhook.api.localqueue import parse_local_queue
from webhook.api.views import ObjectView, WorkloadRecord
from webhook.api.workload import Workload, parse_admission, parse_workload
from webhook.controller.cache import ClusterCache
from webhook.controller.reservations import Reservations
from webhook.core.backlog import Backlog
from webhook.core.demand import DemandCache
from webhook.core.snapshot import Snapshot
from webhook.kube.resources import NAMESPACE, WORKLOAD
from webhook.logs import object_fields

log = logging.getLogger(__name__)
Key = tuple[str, str]
T = TypeVar("T")


class Snapshotter:
    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache
        self.demands = DemandCache()  # kept from pass to pass: most Workloads are the same objects as last time
        # The pending Workloads of the snapshot by LocalQueue and shape, in queue order, kept in step with it by
        # ``take`` (every change it notes): a pass reads only the queues' fronts instead of sorting them all.
        self.backlog = Backlog(self.demands)
        self._parsed: dict[Key, tuple[str, Workload | None]] = {}
        self._parsed_queues: dict[str, dict[Key, tuple[str, Any]]] = {}  # by kind, as ``_parsed``
        self._bad: set[tuple[str, str, str]] = set()
        self._journal = cache.journal(quiet=True)
        self._effective: dict[Key, Workload] | None = None  # None until the first snapshot
        self._finished: dict[Key, Workload] = {}
        self._overlaid: set[Key] = set()  # keys shown with an assumed admission in the last snapshot
        # What the scheduler saw of each Workload (``_view``), and whether anything changed since it last ran.
        self._views: dict[Key, tuple[Any, ...]] = {}
        self.dirty = True
        self._last_namespaces: dict[str, Any] | None = None

    def take(self, reservations: Reservations) -> Snapshot:
        """The snapshot for this pass: only the Workloads the cache saw change are read again (all of them after a
        journal overflow), with the admissions ``reservations`` assumes shown as held."""
        changed = self._journal.take()
        rebuilt = changed is None or self._effective is None
        if changed is None or self._effective is None:
            touched = self._rebuild()
        else:
            touched = {(key.namespace, key.name) for key in changed.get(WORKLOAD, ())}
            for key in touched:
                self._update(key, self._cache.workload(*key))
        assert self._effective is not None
        assumed_keys = list(reservations.keys())
        versions = {key: version(seen) for key in assumed_keys if (seen := self._cache.workload(*key))}
        reservations.settle(versions)
        overlaid: dict[Key, Workload] = {}
        for key in assumed_keys:
            wl = self._effective.get(key)
            assumed = reservations.admission_for(key)
            if wl is not None and assumed is not None and wl.admission is None:
                overlaid[key] = dataclasses.replace(wl, admission=parse_admission(assumed))
        # An assumption that ended (written, refused, settled) changes what the scheduler sees as held.
        for key in touched | (overlaid.keys() ^ self._overlaid):
            wl = overlaid.get(key) or self._effective.get(key)
            self.note(key, wl)
            if not rebuilt:
                self.backlog.put(key, wl)
        self._overlaid = set(overlaid)
        if overlaid:
            workloads = [wl for key, wl in self._effective.items() if key not in overlaid] + list(overlaid.values())
        else:
            workloads = list(self._effective.values())
        if rebuilt:
            self.backlog = Backlog.of(workloads, self.demands)
        namespaces = {ns.metadata.get("name", ""): ns.labels for ns in self._cache.views(NAMESPACE, ObjectView)}
        if namespaces != self._last_namespaces:
            self._last_namespaces, self.dirty = namespaces, True
        cache = self._cache  # the queue objects read, then parsed (again only where their version changed)
        queues, flavors, local_queues, cohorts = (
            cache.cluster_queues(),
            cache.resource_flavors(),
            cache.local_queues(),
            cache.cohorts(),
        )
        return Snapshot(
            cluster_queues=self._parse_all(queues, "ClusterQueue", parse_cluster_queue),
            flavors=self._parse_all(flavors, "ResourceFlavor", parse_resource_flavor),
            local_queues=self._parse_all(local_queues, "LocalQueue", parse_local_queue),
            workloads=workloads,
            namespaces=namespaces,
            cohorts=self._parse_all(cohorts, "Cohort", parse_cohort),
        )

    def workload(self, key: Key) -> Workload | None:
        """The unfinished Workload as the last snapshot parsed it (without an assumed admission)."""
        return (self._effective or {}).get(key)

    def finished(self) -> list[Workload]:
        """The finished Workloads, which the snapshot leaves out."""
        return list(self._finished.values())

    def note(self, key: Key, wl: Workload | None) -> None:
        """Remember what the scheduler will see of this Workload; a difference from what it saw last time (or
        from what its own admission made of it) means scheduling again may decide differently."""
        view = _view(wl)
        if view != self._views.get(key):
            self.dirty = True
        if view is None:
            self._views.pop(key, None)
        else:
            self._views[key] = view

    def assumed(self, key: Key, admission: Mapping[str, Any]) -> None:
        """The scheduler's own admission of ``key``: what the next snapshot shows of it (assumed, then written) is
        the pass's own doing, no reason to schedule again."""
        wl = self.workload(key)
        if wl is not None and (view := _view(dataclasses.replace(wl, admission=parse_admission(admission)))):
            self._views[key] = view

    def trim(self, workloads: Sequence[Workload]) -> None:
        """A fresh DemandCache once the kept one mostly holds the demands of Workloads gone or changed (and the
        backlog built again on it: its lines are keyed by those demands)."""
        if len(self.demands) > 2 * len(workloads) + 1_000:
            self.demands = DemandCache()
            self.backlog = Backlog.of(workloads, self.demands)

    def _rebuild(self) -> set[Key]:
        """Every Workload read again (the first pass, or after the journal overflowed); returns their keys."""
        self._effective, self._finished = {}, {}
        live: set[Key] = set()
        for workload in self._cache.workloads():
            key = (workload.metadata.get("namespace", ""), workload.metadata.get("name", ""))
            live.add(key)
            self._update(key, workload)
        gone = set(self._parsed) - live
        for key in gone:
            self._update(key, None)
        self.dirty = True
        return live | gone | set(self._views)

    def _update(self, key: Key, workload: WorkloadRecord | None) -> None:
        """Read one Workload again (if its version changed) into the snapshot's part kept from pass to pass."""
        assert self._effective is not None
        wl: Workload | None = None
        if workload is not None:
            meta = workload.metadata
            rv = str(meta.get("resourceVersion", ""))
            cached = self._parsed.get(key)
            if cached is None or cached[0] != rv:
                cached = (rv, self._parse(workload, "Workload", parse_workload))
                self._parsed[key] = cached
            wl = cached[1]
            if wl is not None and meta.get("deletionTimestamp") and wl.admission is None:
                wl = None  # being deleted: never admitted again (one that holds quota keeps counting)
        else:
            self._parsed.pop(key, None)
        self._effective.pop(key, None)
        self._finished.pop(key, None)
        if wl is not None:
            # Finished ones hold nothing and wait for nothing: the scheduler never sees them (with a Job's
            # retention they are most of the cache); only the queue status counts them.
            (self._finished if wl.finished else self._effective)[key] = wl

    def _parse(self, obj: ObjectView, kind: str, parse: Callable[[Mapping[str, Any]], T]) -> T | None:
        """``obj`` decoded into the scheduler's type for ``kind`` (from the object as sent: ``parse`` is
        ``webhook.api``'s decoder); None, said once per version, when it is malformed."""
        try:
            return parse(obj.raw)
        except ValueError as exc:
            meta = obj.metadata
            marker = (kind, f"{meta.get('namespace', '')}/{meta.get('name', '')}", str(meta.get("resourceVersion")))
            if marker not in self._bad:  # say it once per version, not once per pass
                self._bad.add(marker)
                log.warning("ignoring malformed %s: %s", kind, exc, extra=object_fields(obj.raw))
            return None

    def _parse_all(self, objs: list[ObjectView], kind: str, parse: Callable[[Mapping[str, Any]], T]) -> list[T]:
        """Queues, flavors and cohorts, parsed again only when their version changes (like Workloads): every pass
        took them all, and a ClusterQueue changes far less often than passes run."""
        cache: dict[Key, tuple[str, Any]] = self._parsed_queues.setdefault(kind, {})
        out: list[T] = []
        live: set[Key] = set()
        for obj in objs:
            meta = obj.metadata
            key = (meta.get("namespace", ""), meta.get("name", ""))
            rv = str(meta.get("resourceVersion", ""))
            live.add(key)
            cached = cache.get(key)
            if cached is None or cached[0] != rv or not rv:
                parsed = self._parse(obj, kind, parse)
                if cached is None or parsed != cached[1]:
                    self.dirty = True  # a status we wrote parses the same: only the spec's changes count
                cached = (rv, parsed)
                cache[key] = cached
            if cached[1] is not None:
                out.append(cached[1])
        for gone in set(cache) - live:
            del cache[gone]
            self.dirty = True
        return out


def version(workload: ObjectView) -> int:
    """A Workload's resourceVersion as a number (0 if it has none)."""
    rv = str(workload.metadata.get("resourceVersion", ""))
    return int(rv) if rv.isdigit() else 0


def _view(wl: Workload | None) -> tuple[Any, ...] | None:
    """What the scheduler reads of a Workload, but the conditions beyond finished and evicted: their messages and
    times (a pending reason, QuotaReserved's time once our admission is written) change no decision without
    fair sharing. None: not in the snapshot."""
    if wl is None:
        return None
    return (
        wl.uid,
        wl.pod_sets,
        wl.queue_name,
        wl.created,
        wl.priority,
        wl.priority_class,
        wl.active,
        wl.admission,
        wl.requeue_at,
        wl.finished,
        wl.condition_true(COND_EVICTED),
    )
