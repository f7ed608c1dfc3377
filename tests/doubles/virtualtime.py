"""An asyncio event loop on a virtual clock: when nothing is ready, time jumps to the next timer at once.

For timing logic (timeouts, retry periods, deadlines) written against the loop's clock (``loop.time``,
``asyncio.sleep``, ``asyncio.timeout``, ``asyncio.wait(timeout=...)``): a test of a 15 s lease runs in
milliseconds and sees exact instants. Only for code that does no real I/O (the fakes of ``tests/doubles``): a wait
for a socket would never end, so the loop refuses to block without a timer.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events: list[tuple[selectors.SelectorKey, int]] = super().select(0)
        if events or timeout == 0:
            return events
        if timeout is None:
            raise RuntimeError("the virtual-time loop has nothing scheduled: the test would wait forever")
        self._loop.now += timeout
        return events


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        super().__init__(selector=_JumpingSelector(self))

    def time(self) -> float:
        return self.now


def run(coro: Coroutine[Any, Any, T], *, start: float = 1000.0) -> T:
    """Runs ``coro`` to the end on a fresh virtual-time loop."""
    loop = VirtualTimeLoop(start)
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
