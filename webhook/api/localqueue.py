"""LocalQueue: a namespace's entry point into a ClusterQueue.

Owns: the ``LocalQueue`` value type and its parser. Must not: resolve the ClusterQueue it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from webhook.api import wire
from webhook.api.clusterqueue import DEFAULT_WEIGHT, STOP_HOLD, STOP_HOLD_AND_DRAIN, STOP_NONE, parse_weight
from webhook.api.quantity import parse_quantity


@dataclass(frozen=True, slots=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = STOP_NONE
    weight: Fraction = DEFAULT_WEIGHT  # spec.fairSharing.weight (admission fair sharing)
    # status.fairSharing.admissionFairSharingStatus: decayed usage per resource (in units) and when it was sampled
    consumed: dict[str, float] = field(default_factory=dict, compare=False)
    last_update: datetime | None = None

    @property
    def active(self) -> bool:
        return self.stop_policy == STOP_NONE


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueue:
    meta = wire.mapping(obj.get("metadata"), "metadata")
    spec = wire.mapping(obj.get("spec"), "spec")
    stop = wire.string(spec.get("stopPolicy"), "spec.stopPolicy", default=STOP_NONE)
    if stop not in (STOP_NONE, STOP_HOLD, STOP_HOLD_AND_DRAIN):
        raise wire.InvalidObject("spec.stopPolicy", f"unknown stop policy {stop!r}")
    return LocalQueue(
        namespace=wire.string(meta.get("namespace"), "metadata.namespace"),
        name=wire.string(meta.get("name"), "metadata.name"),
        cluster_queue=wire.string(spec.get("clusterQueue"), "spec.clusterQueue"),
        stop_policy=stop,
        weight=parse_weight(spec, "spec"),
        **_admission_fair_sharing(obj),
    )


def _admission_fair_sharing(obj: Mapping[str, Any]) -> dict[str, Any]:
    status = wire.mapping(obj.get("status"), "status")
    fair = wire.mapping(status.get("fairSharing"), "status.fairSharing")
    afs = wire.mapping(fair.get("admissionFairSharingStatus"), "status.fairSharing.admissionFairSharingStatus")
    path = "status.fairSharing.admissionFairSharingStatus"
    consumed = wire.mapping(afs.get("consumedResources"), f"{path}.consumedResources")
    return {
        "consumed": {r: parse_quantity(q).nano / 1e9 for r, q in consumed.items()},
        "last_update": wire.optional_time(afs.get("lastUpdate"), f"{path}.lastUpdate"),
    }
