"""Quota reserved in memory before the API server confirms it: assume first, commit, then forget.

The scheduler admits from the cache. Between deciding an admission and seeing it come back through the watch,
the cache does not show the quota as used, so a second pass could hand the same quota out again. Every
admission is therefore *assumed* here before its write starts, and the scheduler counts assumed admissions as
held. An assumption ends when:
- the write succeeded and its result was put into the cache (the cache now shows the admission), or
- the write was refused outright (conflict, not found, invalid): nothing was stored, so the quota is free, or
- the write's outcome is unknown (timeout, connection lost): the assumption stays until the cache shows a newer
  version of the Workload than the one the write was based on, whatever that version says. Keeping it longer
  than needed only delays an admission; dropping it early could over-commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Key = tuple[str, str]


@dataclass(frozen=True)
class Assumed:
    admission: Mapping[str, Any]  # the status.admission being written
    base_version: int  # resourceVersion of the Workload the write started from
    uncertain: bool = False  # the write may or may not have happened


class Reservations:
    def __init__(self) -> None:
        self._assumed: dict[Key, Assumed] = {}

    def __len__(self) -> int:
        return len(self._assumed)

    def __contains__(self, key: object) -> bool:
        return key in self._assumed

    def assume(self, key: Key, admission: Mapping[str, Any], *, base_version: int) -> None:
        self._assumed[key] = Assumed(admission, base_version)

    def confirmed(self, key: Key) -> None:
        """The write succeeded and the cache holds its result."""
        self._assumed.pop(key, None)

    def refused(self, key: Key) -> None:
        """The server stored nothing: the quota is free again."""
        self._assumed.pop(key, None)

    def unknown(self, key: Key) -> None:
        """The write may have happened: hold the quota until the cache shows what the server has."""
        current = self._assumed.get(key)
        if current is not None:
            self._assumed[key] = Assumed(current.admission, current.base_version, uncertain=True)

    def settle(self, versions: Mapping[Key, int]) -> None:
        """Drop uncertain assumptions whose Workload the cache has seen change (or vanish) since the write."""
        for key, assumed in list(self._assumed.items()):
            if not assumed.uncertain:
                continue
            seen = versions.get(key)
            if seen is None or seen > assumed.base_version:
                del self._assumed[key]

    def admission_for(self, key: Key) -> Mapping[str, Any] | None:
        assumed = self._assumed.get(key)
        return None if assumed is None else assumed.admission

    def keys(self) -> Iterable[Key]:
        return self._assumed.keys()
