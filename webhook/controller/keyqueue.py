"""A de-duplicating queue of keys: the reconciler's "these objects changed" inbox.

Owns: ``KeyQueue``, FIFO by first arrival; putting a key that is already waiting does nothing, so a burst of
changes to one object costs one reconcile. Consumers read the current state from the cache, not the change.
Must not: hold objects; only keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class KeyQueue(Generic[K]):
    def __init__(self) -> None:
        self._keys: dict[K, None] = {}  # insertion-ordered set
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def put(self, key: K) -> None:
        self._keys.setdefault(key, None)
        self._ready.set()

    def get_nowait(self) -> K | None:
        """The oldest waiting key, or None."""
        if not self._keys:
            return None
        key = next(iter(self._keys))
        del self._keys[key]
        return key

    async def get(self) -> K:
        """Wait for and take the oldest waiting key."""
        while not self._keys:
            self._ready.clear()
            await self._ready.wait()
        key = next(iter(self._keys))
        del self._keys[key]
        return key

    def drain(self) -> list[K]:
        """Take every waiting key at once, oldest first."""
        keys = list(self._keys)
        self._keys.clear()
        return keys
