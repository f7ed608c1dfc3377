"""A token bucket: at most ``rate`` a second on average, ``burst`` at once, for writes that are only information.

Owns: ``TokenBucket``. The caller passes the time (seconds, any fixed origin), so a reconciler under a test's clock
and the event recorder under ``time.monotonic`` share it.
"""

from __future__ import annotations


class TokenBucket:
    def __init__(self, rate: float, burst: int) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs a positive rate and a burst of at least 1 ({rate}, {burst})")
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._at: float | None = None  # when the tokens were last counted

    def _refill(self, now: float) -> None:
        if self._at is not None and now > self._at:
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        if self._at is None or now > self._at:
            self._at = now

    def take(self, now: float) -> bool:
        """One token if there is one (True), else nothing (False)."""
        self._refill(now)
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def next_at(self, now: float) -> float:
        """When the next token is there (``now`` if it is)."""
        self._refill(now)
        return now if self._tokens >= 1 else now + (1 - self._tokens) / self._rate
