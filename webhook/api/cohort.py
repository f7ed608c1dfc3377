"""Cohort: a node of the quota tree above ClusterQueues, with quota of its own and limits towards its parent.

Owns: the ``Cohort`` value type and its parser (both API versions share the schema), with its
``fairSharing.weight``. A Cohort's ``resourceGroups`` give quota owned by the cohort itself, shared by everything
below it; its ``borrowingLimit``/``lendingLimit`` bound what the whole subtree takes from, or gives to, the parent.
Must not: build the tree, detect cycles or account usage; ``webhook.core.quota`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from webhook.api import wire
from webhook.api.clusterqueue import DEFAULT_WEIGHT, ResourceGroup, parse_resource_group, parse_weight


@dataclass(frozen=True, slots=True)
class Cohort:
    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    weight: Fraction = DEFAULT_WEIGHT


def parse_cohort(obj: Mapping[str, Any]) -> Cohort:
    meta = wire.mapping(obj.get("metadata"), "metadata")
    spec = wire.mapping(obj.get("spec"), "spec")
    return Cohort(
        name=wire.string(meta.get("name"), "metadata.name"),
        parent=wire.optional_string(spec.get("parentName"), "spec.parentName") or None,
        resource_groups=tuple(
            parse_resource_group(g, f"spec.resourceGroups[{i}]")
            for i, g in enumerate(wire.items(spec.get("resourceGroups"), "spec.resourceGroups"))
        ),
        weight=parse_weight(spec, "spec"),
    )
