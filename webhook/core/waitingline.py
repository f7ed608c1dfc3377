"""A ClusterQueue's waiting line during one scheduling pass: the workloads it has taken so far, in queue order, and
where it stands (its cursor, whether it is blocked, the shapes that did not fit).

A queue reads its waiting workloads as a merge of ``core.backlog`` lines (one per LocalQueue and shape), taking only
the heads the pass tries; in a BestEffortFIFO queue a shape that did not fit is left behind whole. Owned by
``core.scheduler``, which moves the cursor and records each entry's outcome.
Must not: do I/O or read the clock; decide anything (the scheduler does).
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from webhook.api.clusterqueue import STRICT_FIFO, ClusterQueue
from webhook.api.workload import Workload
from webhook.core.assignment import FlavorAssigner
from webhook.core.demand import Demand
from webhook.core.quota import QueueQuota

# An entry's outcome in the pass ("" while undecided).
ADMITTED: Final = "admitted"
PREEMPTING: Final = "preempting"  # quota held for it while its victims stop
FAILED: Final = "failed"  # it did not fit (nor could it preempt)
ORDER = operator.attrgetter("queue_order")  # a Workload's queue order, without a Python call per item


@dataclass(slots=True, eq=False)  # compared by identity: found in its queue's list by ``list.index``
class Entry:
    workload: Workload
    demand: Demand
    order: tuple[int, float, str, str, str]
    outcome: str = ""
    preemption_failed: bool = False


class Lines:
    """A queue's waiting workloads not taken yet, in queue order: a merge of its lines (one per LocalQueue and
    shape). A shape left behind (``drop``) is skipped whole, however many workloads it holds."""

    __slots__ = ("_dropped", "_heap", "_only", "_pos")

    def __init__(self, lines: Sequence[tuple[Demand, Sequence[Workload]]]) -> None:
        # Orders are unique (they end with the namespace and name), so the tuples never compare further.
        self._heap = [(line[0].queue_order, i, 0, demand, line) for i, (demand, line) in enumerate(lines) if line]
        self._dropped: set[Demand] = set()
        # One line (a queue of one LocalQueue and one shape, the common case): read in place, no heap.
        self._only = self._heap[0] if len(self._heap) == 1 else None
        self._pos = 0
        heapq.heapify(self._heap)

    def next(self) -> tuple[Workload, Demand] | None:
        only = self._only
        if only is not None:
            demand, line, pos = only[3], only[4], self._pos
            if pos >= len(line) or demand in self._dropped:
                return None
            self._pos = pos + 1
            return line[pos], demand
        heap = self._heap
        while heap:
            _, i, pos, demand, line = heap[0]
            if demand in self._dropped:
                heapq.heappop(heap)
                continue
            if pos + 1 < len(line):
                heapq.heapreplace(heap, (line[pos + 1].queue_order, i, pos + 1, demand, line))
            else:
                heapq.heappop(heap)
            return line[pos], demand
        return None

    def drop(self, demand: Demand) -> None:
        self._dropped.add(demand)


@dataclass(slots=True)
class WaitingQueue:
    cq: ClusterQueue
    quota: QueueQuota
    assigner: FlavorAssigner
    # The waiting workloads taken so far, in order (``head`` takes the next from ``source``); all of them with
    # admission fair sharing, which reorders them.
    entries: list[Entry] = field(default_factory=list)
    cursor: int = 0
    blocked: bool = False
    failed_shapes: dict[Demand, int] = field(default_factory=dict)
    lines: list[tuple[Demand, Sequence[Workload]]] = field(default_factory=list)  # every line, for the reasons
    total: int = 0  # workloads in ``lines``
    source: Lines | None = None
    # Admission fair sharing only: the entries of each LocalQueue in order, and how many of each are behind us.
    by_local_queue: dict[tuple[str, str], list[Entry]] | None = None
    done_in_local_queue: dict[tuple[str, str], int] = field(default_factory=dict)

    def head(self) -> Entry | None:
        """The entry at the cursor (taken from the source if need be); None when the queue is exhausted."""
        if self.cursor < len(self.entries):
            return self.entries[self.cursor]
        return self._take()

    def take_all(self) -> None:
        while self._take() is not None:
            pass

    def _take(self) -> Entry | None:
        source = self.source
        taken = source.next() if source is not None else None
        if taken is None:
            self.source = None
            return None
        wl, demand = taken
        e = Entry(wl, demand, wl.queue_order)
        self.entries.append(e)
        return e

    def in_order(self, *, whole: bool, demand_of: Callable[[Workload], Demand]) -> Iterator[Entry]:
        """Every entry in queue order, those never taken (left behind with their shape, or behind a StrictFIFO
        head that does not fit) as fresh entries with no outcome but the shape's. ``whole``: all of them will be
        read (one sort of the lines, in C), not only the first few (a lazy merge)."""
        if self.by_local_queue is not None or (self.source is None and len(self.entries) == self.total):
            yield from self.entries  # all taken: in their order (admission fair sharing's, if it reordered them)
            return
        taken = {id(e.workload): e for e in self.entries}
        left_behind = self.cq.queueing_strategy != STRICT_FIFO
        ordered: Iterable[Workload]
        if whole:
            ordered = sorted(itertools.chain.from_iterable(line for _, line in self.lines), key=ORDER)
        else:
            ordered = (wl for wl, _ in iter(Lines(self.lines).next, None))
        for wl in ordered:
            e = taken.get(id(wl))
            if e is None:
                demand = demand_of(wl)
                failed = left_behind and demand in self.failed_shapes
                e = Entry(wl, demand, wl.queue_order, outcome=FAILED if failed else "")
            yield e
