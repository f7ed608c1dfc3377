"""The collector's policy for a long-lived process: what survives a full collection is frozen.

Owns: ``FreezeSurvivors``, a ``gc.callbacks`` hook. A full (generation 2) collection walks every tracked object
the process holds; a reconciler holds hundreds of thousands (its cache, the scheduler's snapshot), nearly all
of which survive every walk, so each took 0.2-0.4 s of a loaded 2-core machine and held the interpreter
meanwhile. Frozen after the collection that found them alive, they are skipped by the next ones, which then
walk only what is new since. Reference counting still frees them the moment they are dropped; only a cycle
among frozen objects waits: every ``thaw_every`` seconds everything is unfrozen, so the next full collection
walks (and frees) all of it once.
Must not: collect on its own, or run anything but the collector's bookkeeping (it runs inside a collection).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Literal, Protocol

Callback = Callable[[Literal["start", "stop"], dict[str, int]], object]


class Collector(Protocol):
    """The part of the ``gc`` module used (a fake in tests)."""

    callbacks: list[Callback]

    def freeze(self) -> None: ...

    def unfreeze(self) -> None: ...


class FreezeSurvivors:
    def __init__(
        self,
        *,
        thaw_every: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        collector: Collector = gc,
    ) -> None:
        self._thaw_every = thaw_every
        self._clock = clock
        self._gc = collector
        self._thawed_at = clock()
        self.frozen = 0  # full collections whose survivors were frozen
        self.thawed = 0

    def install(self) -> None:
        if self._on_collection not in self._gc.callbacks:
            self._gc.callbacks.append(self._on_collection)

    def uninstall(self) -> None:
        if self._on_collection in self._gc.callbacks:
            self._gc.callbacks.remove(self._on_collection)

    def _on_collection(self, phase: Literal["start", "stop"], info: dict[str, int]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        now = self._clock()
        if now - self._thawed_at >= self._thaw_every:
            self._gc.unfreeze()  # the next full collection walks everything, frozen cycles included
            self._thawed_at = now
            self.thawed += 1
            return
        self._gc.freeze()
        self.frozen += 1
