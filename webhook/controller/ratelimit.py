"""Limits on the writes that are only information (events, pending reasons, queue status).

Owns: ``TokenBucket`` (at most ``rate`` a second on average, ``burst`` at once) and ``WriteLatency`` (how slowly the
API server answers the writes that admit, and the share of the information rates that leaves them). The caller
of a bucket passes the time (seconds, any fixed origin), so a reconciler under a test's clock and the event
recorder under ``time.monotonic`` share it.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger(__name__)


def whole() -> float:
    """The share of a rate when nothing scales it: all of it."""
    return 1.0


class TokenBucket:
    def __init__(self, rate: float, burst: int, *, share: Callable[[], float] = whole) -> None:
        """``share``: the fraction of ``rate`` that refills now (``WriteLatency.share``)."""
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs a positive rate and a burst of at least 1 ({rate}, {burst})")
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._at: float | None = None  # when the tokens were last counted
        self._share = share

    def follow(self, share: Callable[[], float]) -> None:
        """From now on the rate is ``rate * share()``."""
        self._share = share

    def rate(self) -> float:
        """Tokens a second now."""
        return self._rate * self._share()

    def _refill(self, now: float) -> None:
        if self._at is not None and now > self._at:
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self.rate())
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
        """When the next token is there at today's rate (``now`` if it is)."""
        self._refill(now)
        return now if self._tokens >= 1 else now + (1 - self._tokens) / self.rate()


class WriteLatency:
    """How much slower the API server answers our admission writes now than it did lately, and from it the
    ``share`` of their rates that the writes that are only information keep.

    Now is the median of the last ``window`` answers; lately, the lowest such median of the last ``memory``
    seconds. Up to ``tolerance`` times lately (or ``relaxed`` seconds, whichever is more) information keeps its
    whole rates; beyond, the share is that bound over now, never less than ``least``. An API server slow all along
    (a distant etcd) is not held back; one that slows down as work piles up (each write delaying the others on
    its CPUs) is, and events, pending reasons and queue status give their place to the writes that admit. With no
    admission for ``stale`` seconds the share is whole again."""

    def __init__(
        self,
        *,
        tolerance: float = 2.0,
        relaxed: float = 0.02,
        least: float = 0.2,
        window: int = 16,
        memory: float = 300.0,
        stale: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if tolerance < 1 or relaxed < 0 or not 0 < least <= 1 or window < 1:
            raise ValueError(
                "write latency needs tolerance >= 1, relaxed >= 0, 0 < least <= 1 and window >= 1 "
                f"({tolerance}, {relaxed}, {least}, {window})"
            )
        self._tolerance = tolerance
        self._relaxed = relaxed
        self._least = least
        self._memory = memory
        self._stale = stale
        self._clock = clock
        self._samples: deque[float] = deque(maxlen=window)
        # (when, median) with the medians rising: the first is the lowest of the last ``memory`` seconds.
        self._lows: deque[tuple[float, float]] = deque()
        self._share = 1.0
        self._at = 0.0
        self._told: float | None = None  # when a change of share was last logged

    def observe(self, seconds: float) -> None:
        """One admission write took ``seconds`` from request to answer."""
        now = self._at = self._clock()
        self._samples.append(seconds)
        median = statistics.median(self._samples)
        lows = self._lows
        while lows and lows[-1][1] >= median:
            lows.pop()
        if not lows or int(lows[-1][0]) != int(now):  # one a second at most: ``memory`` entries, whatever the rate
            lows.append((now, median))
        while len(lows) > 1 and lows[0][0] < now - self._memory:
            lows.popleft()
        bound = max(self._relaxed, self._tolerance * lows[0][1])
        before, self._share = self._share, 1.0 if median <= bound else max(self._least, bound / median)
        if (before == 1.0) != (self._share == 1.0) and (self._told is None or now - self._told >= 60):
            self._told = now
            log.info(
                "admission writes answered in %.0f ms (median of the last %d; lately %.0f ms): events, pending "
                "reasons and queue status at %.0f%% of their rates",
                median * 1000,
                len(self._samples),
                lows[0][1] * 1000,
                self._share * 100,
            )

    def share(self) -> float:
        """The fraction of their rates the information writes keep now."""
        if self._share < 1.0 and self._clock() - self._at > self._stale:
            self._samples.clear()
            self._share = 1.0
        return self._share
