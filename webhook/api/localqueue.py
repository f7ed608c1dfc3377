"""LocalQueue: a namespace's entry point into a ClusterQueue.

Owns: the ``LocalQueue`` value type and its parser. Must not: resolve the ClusterQueue it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api import wire
from webhook.api.clusterqueue import STOP_HOLD, STOP_HOLD_AND_DRAIN, STOP_NONE


@dataclass(frozen=True, slots=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = STOP_NONE

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
    )
