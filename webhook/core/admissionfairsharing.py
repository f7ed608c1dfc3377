"""Admission fair sharing: the LocalQueues of one ClusterQueue take turns by how much they used lately.

Owns: ``AdmissionFairSharing`` (Kueue's ``admissionFairSharing`` configuration), the decayed usage of a LocalQueue
(``next_consumed``: an exponential moving average whose weight halves every ``usageHalfLifeTime``, sampled at most
every ``usageSamplingInterval``) and the score that orders the workloads of a ClusterQueue whose
``admissionScope.admissionMode`` is ``UsageBasedAdmissionFairSharing``: the LocalQueue's consumed resources,
weighted by ``resourceWeights``, divided by the LocalQueue's ``fairSharing.weight`` (lower goes first).
Must not: read the clock; ``now`` and the previous sample's time are passed in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Final

USAGE_BASED: Final = "UsageBasedAdmissionFairSharing"


@dataclass(frozen=True, slots=True)
class AdmissionFairSharing:
    enabled: bool = False
    usage_half_life_seconds: float = 0.0  # 0: no memory, the current usage alone counts
    usage_sampling_interval_seconds: float = 300.0
    resource_weights: Mapping[str, float] = field(default_factory=dict)  # resource -> weight (default 1)


def next_consumed(
    previous: Mapping[str, float],
    last_update: datetime | None,
    current: Mapping[str, float],
    now: datetime,
    config: AdmissionFairSharing,
) -> tuple[dict[str, float], datetime] | None:
    """The LocalQueue's consumed resources at ``now`` from the last sample and what it holds now, or None when
    the sampling interval has not passed yet (nothing to write)."""
    if last_update is not None:
        elapsed = (now - last_update).total_seconds()
        if elapsed < config.usage_sampling_interval_seconds:
            return None
    else:
        elapsed = config.usage_sampling_interval_seconds
    half_life = config.usage_half_life_seconds
    keep = 0.0 if half_life <= 0 or last_update is None else math.pow(0.5, elapsed / half_life)
    out: dict[str, float] = {}
    for resource in sorted(set(previous) | set(current)):
        value = previous.get(resource, 0.0) * keep + current.get(resource, 0.0) * (1 - keep)
        if value > 0:
            out[resource] = value
    return out, now


def score(consumed: Mapping[str, float], weight: Fraction, config: AdmissionFairSharing) -> float:
    """Weighted consumed resources over the LocalQueue's weight: lower is admitted first (0 weight: last)."""
    total = sum(amount * config.resource_weights.get(resource, 1.0) for resource, amount in consumed.items())
    if weight == 0:
        return math.inf if total > 0 else 0.0
    return total / float(weight)
