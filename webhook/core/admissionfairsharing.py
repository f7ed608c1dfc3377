"""Admission fair sharing: the LocalQueues of one ClusterQueue take turns by how much they used lately.

Owns: ``AdmissionFairSharing`` (Kueue's ``admissionFairSharing`` configuration), the decayed usage of a LocalQueue
(``next_consumed``: an exponential moving average whose weight halves every ``usageHalfLifeTime``, sampled at most
every ``usageSamplingInterval``) and the score that orders the workloads of a ClusterQueue whose
``admissionScope.admissionMode`` is ``UsageBasedAdmissionFairSharing``: the LocalQueue's consumed resources,
weighted by ``resourceWeights``, divided by the LocalQueue's ``fairSharing.weight`` (lower goes first);
and Kueue's *entry penalty*: a workload admitted since the LocalQueue's last sample counts as its requests times
the weight the next sample will give them (``1 - 0.5^(interval / halfLife)``), so that a burst of admissions from
one LocalQueue pushes it back at once, within the same pass and in the passes before that sample settles it.
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


def entry_penalty(requests: Mapping[str, float], config: AdmissionFairSharing) -> dict[str, float]:
    """What admitting a workload with these total requests (per resource, in units) adds to its LocalQueue's
    usage until the next sample: Kueue's ``CalculateEntryPenalty`` (none without a half-life)."""
    half_life = config.usage_half_life_seconds
    if half_life <= 0:
        return {}
    alpha = 1 - math.pow(0.5, config.usage_sampling_interval_seconds / half_life)
    return {resource: amount * alpha for resource, amount in requests.items()}


def score(
    consumed: Mapping[str, float],
    weight: Fraction,
    config: AdmissionFairSharing,
    penalty: Mapping[str, float] | None = None,
) -> float:
    """Weighted consumed resources plus pending penalties, over the LocalQueue's weight: lower is admitted first
    (a weight of 0 always last, as in Kueue's ``CalculateUsage``)."""
    if weight <= 0:
        return math.inf
    total = 0.0
    for resource in sorted(set(consumed) | set(penalty or ())):
        amount = consumed.get(resource, 0.0) + (penalty.get(resource, 0.0) if penalty else 0.0)
        total += amount * config.resource_weights.get(resource, 1.0)
    return total / float(weight)
