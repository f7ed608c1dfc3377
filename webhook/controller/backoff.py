"""Capped, jittered exponential backoff for reconnects and retries.

Owns: the delay sequence only; callers sleep. Jitter spreads replicas and watches that failed together.
Must not: sleep or read the clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays ``initial * factor**n`` capped at ``cap``, each shortened by a random share up to ``jitter``.

    With the defaults the n-th delay lies in ``[d/2, d]`` for ``d = min(30, 0.5 * 2**n)`` seconds.
    """

    initial: float = 0.5
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 0.5
    random: Callable[[], float] = field(default=random.random, repr=False)
    attempts: int = 0

    def __post_init__(self) -> None:
        if not (0 < self.initial <= self.cap and self.factor >= 1 and 0 <= self.jitter <= 1):
            raise ValueError("backoff needs 0 < initial <= cap, factor >= 1 and 0 <= jitter <= 1")

    def next(self) -> float:
        """The delay before the next attempt; each call counts one more failure."""
        # Cap the exponent too, so a long outage cannot overflow the float.
        ceiling = min(self.cap, self.initial * self.factor ** min(self.attempts, 64))
        self.attempts += 1
        return ceiling * (1 - self.jitter * self.random())

    def reset(self) -> None:
        """Call after a success: the next failure starts again from ``initial``."""
        self.attempts = 0
