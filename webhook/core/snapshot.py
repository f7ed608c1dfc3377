"""The scheduler's input: everything it may look at, frozen at one moment.

Owns: ``Snapshot``. The reconciler builds it from its cache; tests build it with builders.
Must not: hold anything mutable or anything read from the outside world during a pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from webhook.api.clusterqueue import ClusterQueue
from webhook.api.cohort import Cohort
from webhook.api.flavor import ResourceFlavor
from webhook.api.localqueue import LocalQueue
from webhook.api.workload import Workload


@dataclass(frozen=True, slots=True)
class Snapshot:
    cluster_queues: Sequence[ClusterQueue]
    flavors: Sequence[ResourceFlavor]
    local_queues: Sequence[LocalQueue]
    # All workloads: those holding quota (status.admission set) and those pending; finished and
    # deactivated ones are ignored, so passing everything from the cache is fine.
    workloads: Sequence[Workload]
    # Namespace labels for namespaceSelector; a namespace not listed has only kubernetes.io/metadata.name.
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Cohort objects: the tree above the queues. A cohort named only by ClusterQueues is a root with no quota.
    cohorts: Sequence[Cohort] = ()
