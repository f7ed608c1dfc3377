"""ResourceFlavor: the node labels, taints and tolerations a flavor stands for, and whether a pod set may use it.

Owns: ``ResourceFlavor``, ``Taint``, ``Toleration`` and their parsers; toleration matching; flavor eligibility
for a pod set (taints tolerated, node selector compatible), as Kueue evaluates it at admission.
Must not: know about quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from webhook.api import wire

# Only these taints keep pods off nodes; PreferNoSchedule is a hint and is ignored at admission, as in Kueue.
BLOCKING_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str
    value: str = ""


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""  # empty matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return self.key in ("", taint.key)
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = None

    def admits(self, node_selector: Mapping[str, str], tolerations: tuple[Toleration, ...]) -> str | None:
        """None when a pod set with this selector and these tolerations may use the flavor, else why not."""
        for key, value in node_selector.items():
            # Only keys the flavor labels are compared: other keys are for kube-scheduler to resolve.
            if key in self.node_labels and self.node_labels[key] != value:
                return f"nodeSelector {key}={value} does not match flavor label {key}={self.node_labels[key]}"
        for taint in self.node_taints:
            if taint.effect not in BLOCKING_EFFECTS:
                continue
            if not any(t.tolerates(taint) for t in (*tolerations, *self.tolerations)):
                return f"untolerated taint {taint.key}={taint.value}:{taint.effect}"
        return None


def parse_taint(raw: object, path: str) -> Taint:
    obj = wire.mapping(raw, path)
    return Taint(
        key=wire.string(obj.get("key"), f"{path}.key"),
        effect=wire.string(obj.get("effect"), f"{path}.effect"),
        value=wire.string(obj.get("value"), f"{path}.value", default=""),
    )


def parse_toleration(raw: object, path: str) -> Toleration:
    obj = wire.mapping(raw, path)
    return Toleration(
        key=wire.string(obj.get("key"), f"{path}.key", default=""),
        operator=wire.string(obj.get("operator"), f"{path}.operator", default="Equal"),
        value=wire.string(obj.get("value"), f"{path}.value", default=""),
        effect=wire.string(obj.get("effect"), f"{path}.effect", default=""),
    )


def parse_tolerations(raw: object, path: str) -> tuple[Toleration, ...]:
    return tuple(parse_toleration(t, f"{path}[{i}]") for i, t in enumerate(wire.items(raw, path)))


def parse_resource_flavor(obj: Mapping[str, Any]) -> ResourceFlavor:
    meta = wire.mapping(obj.get("metadata"), "metadata")
    spec = wire.mapping(obj.get("spec"), "spec")
    return ResourceFlavor(
        name=wire.string(meta.get("name"), "metadata.name"),
        node_labels=wire.string_map(spec.get("nodeLabels"), "spec.nodeLabels"),
        node_taints=tuple(
            parse_taint(t, f"spec.nodeTaints[{i}]")
            for i, t in enumerate(wire.items(spec.get("nodeTaints"), "spec.nodeTaints"))
        ),
        tolerations=parse_tolerations(spec.get("tolerations"), "spec.tolerations"),
        topology_name=wire.optional_string(spec.get("topologyName"), "spec.topologyName"),
    )
