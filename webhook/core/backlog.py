"""The pending workloads of every LocalQueue, in queue order and by shape, kept from one scheduling pass to the next.

Owns: ``Backlog``. A pass reads each ClusterQueue's waiting workloads as a merge of these lines (one sorted list per
LocalQueue and demand), so it looks only at what it reaches: the heads it tries, what it admits, and the first
waiting ones it explains. Once a shape does not fit in a BestEffortFIFO queue, its whole line is left behind at once
instead of being stepped over one workload at a time. Kept by the caller and told of every change (``put``), the
lines cost a pass nothing to build; built from a snapshot's workloads (``of``), they cost one sort, as before.
A workload with a requeue time (evicted, backing off) is kept apart: whether it may queue depends on the pass's
clock, so each pass looks at those few itself.
Must not: decide anything, read the clock, or change the workloads it holds.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Iterable, Iterator

from webhook.api.workload import Workload
from webhook.core.demand import Demand, DemandCache

Key = tuple[str, str]

_ORDER = operator.attrgetter("queue_order")


class Backlog:
    def __init__(self, demands: DemandCache | None = None) -> None:
        self.demands = demands if demands is not None else DemandCache()
        # (namespace, LocalQueue name) -> demand -> that LocalQueue's pending workloads of that shape, in queue order.
        self._lines: dict[Key, dict[Demand, list[Workload]]] = {}
        self._timed: dict[Key, Workload] = {}  # pending, with a requeue time: not in a line
        # Where each workload of a line is, to take it out; built by the first ``put`` (a backlog built for one pass
        # never needs it).
        self._where: dict[Key, tuple[Key, Demand, Workload]] | None = {}

    @classmethod
    def of(cls, workloads: Iterable[Workload], demands: DemandCache | None = None) -> Backlog:
        """The backlog of these workloads (any mix: only the pending ones are kept)."""
        backlog = cls(demands)
        for wl in workloads:
            if not wl.pending:
                continue
            if wl.requeue_at is not None:
                backlog._timed[wl.key] = wl
            else:
                backlog._line_of(wl)[2].append(wl)
        for by_shape in backlog._lines.values():
            for line in by_shape.values():
                line.sort(key=_ORDER)
        backlog._where = None
        return backlog

    def __len__(self) -> int:
        in_lines = (
            sum(len(line) for by_shape in self._lines.values() for line in by_shape.values())
            if self._where is None
            else len(self._where)
        )
        return in_lines + len(self._timed)

    def __contains__(self, key: object) -> bool:
        where = self._where if self._where is not None else self._index()
        return key in where or key in self._timed

    def put(self, key: Key, wl: Workload | None) -> None:
        """``key`` is now ``wl`` (None: gone from the snapshot). Only a pending workload stays in the backlog."""
        where = self._where if self._where is not None else self._index()
        self._timed.pop(key, None)
        placed = where.pop(key, None)
        if placed is not None:
            lq_key, demand, old = placed
            by_shape = self._lines[lq_key]
            line = by_shape[demand]
            i = bisect.bisect_left(line, old.queue_order, key=_ORDER)
            assert line[i] is old, "a backlog line lost its order"
            del line[i]
            if not line:
                del by_shape[demand]
                if not by_shape:
                    del self._lines[lq_key]
        if wl is None or not wl.pending:
            return
        if wl.requeue_at is not None:
            self._timed[key] = wl
            return
        lq_key, demand, line = self._line_of(wl)
        bisect.insort(line, wl, key=_ORDER)
        where[key] = (lq_key, demand, wl)

    def _line_of(self, wl: Workload) -> tuple[Key, Demand, list[Workload]]:
        """The line ``wl`` belongs in (its LocalQueue's, of its shape), made if there is none."""
        lq_key = (wl.namespace, wl.queue_name)
        demand = self.demands.of(wl)
        return lq_key, demand, self._lines.setdefault(lq_key, {}).setdefault(demand, [])

    def _index(self) -> dict[Key, tuple[Key, Demand, Workload]]:
        self._where = {
            wl.key: (lq_key, demand, wl)
            for lq_key, by_shape in self._lines.items()
            for demand, line in by_shape.items()
            for wl in line
        }
        return self._where

    def local_queues(self) -> Iterator[tuple[Key, dict[Demand, list[Workload]]]]:
        """Each LocalQueue with pending workloads (in no particular order), and its lines by shape. Read only."""
        return iter(self._lines.items())

    def timed(self) -> Iterator[Workload]:
        """The pending workloads with a requeue time, in no particular order."""
        return iter(self._timed.values())

    def workloads(self) -> Iterator[Workload]:
        """Every pending workload held, lines first (for checks and tests)."""
        for by_shape in self._lines.values():
            for line in by_shape.values():
                yield from line
        yield from self._timed.values()
