"""Which objects a reconciler step must look at next: marked by changes, taken by a pass, failures retried later.

Owns: ``WorkQueue``, a set of keys (a Job's, a pod group's, a Workload's) that need a sync, plus "everything"
(a full pass: a change that may concern any object, the periodic resync, a cache too changed to list), and per
key a rate-limited retry: a key whose sync failed comes back after ``initial * 2**n`` (capped), never at once,
so one object whose writes keep failing neither spins the loop nor makes every pass retry the world.
Must not: read the clock (``now`` is passed in) or know what the keys mean.
"""

from __future__ import annotations

import datetime
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self, *, initial: float = 0.1, cap: float = 30.0) -> None:
        if not 0 < initial <= cap:
            raise ValueError("a work queue's backoff needs 0 < initial <= cap")
        self._initial = initial
        self._cap = cap
        self._marked: set[K] = set()
        self._everything = True  # the first pass looks at all
        self._failures: dict[K, int] = {}
        self._retry_at: dict[K, datetime.datetime] = {}

    def add(self, key: K) -> None:
        self._marked.add(key)

    def add_all(self) -> None:
        """Every object needs a look (a change that may concern any of them)."""
        self._everything = True

    def take(self, now: datetime.datetime) -> tuple[bool, set[K]]:
        """(everything, keys) to sync now: the marked ones and the failed ones whose retry is due; forgets them.

        A failed key marked again (its object changed since) is taken at once, as client-go's queue does: the
        change may be what it needed; its failures still count, so failing again waits twice as long.
        """
        everything, keys = self._everything, self._marked
        self._everything, self._marked = False, set()
        keys |= {k for k, at in self._retry_at.items() if at <= now}
        if everything:
            self._retry_at.clear()
        for key in keys:
            self._retry_at.pop(key, None)
        return everything, keys

    def failed(self, key: K, now: datetime.datetime) -> float:
        """The sync of ``key`` failed: retry it after its backoff (doubling with each failure in a row)."""
        attempts = self._failures.get(key, 0)
        self._failures[key] = attempts + 1
        delay = min(self._cap, self._initial * 2.0 ** min(attempts, 32))
        self._retry_at[key] = now + datetime.timedelta(seconds=delay)
        return delay

    def succeeded(self, keys: Iterable[K]) -> None:
        """These synced: their next failure starts again from ``initial``."""
        for key in keys:
            self._failures.pop(key, None)

    def forget(self, key: K) -> None:
        """The object is gone: no retry, no failure count."""
        self._failures.pop(key, None)
        self._retry_at.pop(key, None)
        self._marked.discard(key)

    def backing_off(self, key: K, now: datetime.datetime) -> bool:
        """``key`` failed and its retry is not due yet."""
        at = self._retry_at.get(key)
        return at is not None and now < at

    def next_retry(self) -> datetime.datetime | None:
        return min(self._retry_at.values(), default=None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)
