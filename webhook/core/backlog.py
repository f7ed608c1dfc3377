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
        self._where: dict[Key, tuple[Key, Demand, Workload]] = {}  # what ``put`` placed in a line, to take it out

    @classmethod
    def of(cls, workloads: Iterable[Workload], demands: DemandCache | None = None) -> Backlog:
        """The backlog of these workloads (any mix: only the pending ones are kept)."""
        backlog = cls(demands)
        for wl in workloads:
            if wl.pending:
                backlog._place(wl, sort=False)
        for by_shape in backlog._lines.values():
            for line in by_shape.values():
                line.sort(key=_ORDER)
        return backlog

    def __len__(self) -> int:
        return len(self._where) + len(self._timed)

    def put(self, key: Key, wl: Workload | None) -> None:
        """``key`` is now ``wl`` (None: gone from the snapshot). Only a pending workload stays in the backlog."""
        self._timed.pop(key, None)
        placed = self._where.pop(key, None)
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
        if wl is not None and wl.pending:
            self._place(wl, sort=True)

    def _place(self, wl: Workload, *, sort: bool) -> None:
        if wl.requeue_at is not None:
            self._timed[wl.key] = wl
            return
        lq_key = (wl.namespace, wl.queue_name)
        demand = self.demands.of(wl)
        line = self._lines.setdefault(lq_key, {}).setdefault(demand, [])
        if sort:
            bisect.insort(line, wl, key=_ORDER)
        else:
            line.append(wl)
        self._where[wl.key] = (lq_key, demand, wl)

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
