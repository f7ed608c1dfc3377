"""Giving freed request bodies back to the OS: glibc's ``malloc_trim`` after enough of them, at most so often.

Owns: ``TrimPolicy`` (when a trim is due: pure, with the clock injected), ``MemoryTrimmer`` (runs the trim in a
thread, off the serving loop) and ``glibc_trim``. A request body arrives in reads of at most 64 KiB
(``server.TLS_READ_BYTES``), under the mmap threshold, so its chunks come from the heap; once freed, they are free
pages inside the heap that glibc keeps (it only gives back the top of the heap by itself). After a burst of large
or aborted uploads RSS stayed near its peak (issue 18). ``malloc_trim(0)`` returns every free page of every arena,
but it walks the heaps holding their locks, so it runs at most once per ``min_seconds`` and only after
``min_bytes`` of bodies were read since the last one; a trim due sooner is deferred, not dropped, so the tail of a
burst is returned too. Elsewhere than glibc, trimming is a no-op.
Must not: know what the requests are.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

log = logging.getLogger(__name__)

MIN_SECONDS: Final = 10.0
MIN_BYTES: Final = 32 * 1024 * 1024

Trim = Callable[[], object]


def glibc_trim() -> Trim:
    """``malloc_trim(0)`` of this process's C library, or a no-op where that is not glibc. ctypes releases the
    interpreter lock around the call, so the serving loop runs while a thread trims."""
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


@dataclass
class TrimPolicy:
    """Counts the bytes of bodies read; says when the next trim is due. One trim is pending at a time."""

    min_seconds: float = MIN_SECONDS
    min_bytes: int = MIN_BYTES
    clock: Callable[[], float] = time.monotonic
    unreturned: int = 0
    pending: bool = False
    last_trim: float = field(default=-math.inf)

    def read(self, nbytes: int) -> float | None:
        """Counts ``nbytes`` read (and freed); returns the delay before a trim when one is newly due, else None."""
        self.unreturned += nbytes
        if self.pending or self.unreturned < self.min_bytes:
            return None
        self.pending = True
        return max(0.0, self.last_trim + self.min_seconds - self.clock())

    def trimmed(self) -> None:
        self.unreturned = 0
        self.last_trim = self.clock()
        self.pending = False


class MemoryTrimmer:
    """Runs ``trim`` in a thread when ``policy`` says so; ``close`` cancels a deferred one."""

    def __init__(
        self,
        *,
        policy: TrimPolicy | None = None,
        trim: Trim | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.policy = policy or TrimPolicy()
        self._trim = trim or glibc_trim()
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None
        self.trims = 0

    def bodies_read(self, nbytes: int) -> None:
        """Called on the serving loop once a request's body is no longer referenced."""
        delay = self.policy.read(nbytes)
        if delay is not None:
            self._task = asyncio.create_task(self._trim_after(delay), name="malloc-trim")

    async def _trim_after(self, delay: float) -> None:
        try:
            await self._sleep(delay)
            await asyncio.to_thread(self._trim)
            self.trims += 1
        except Exception:  # a trim that fails costs memory, never the server: logged, and the next one tried
            log.exception("malloc_trim failed")
        finally:
            self.policy.trimmed()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
