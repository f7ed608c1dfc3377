"""Simulated nodes for the local cluster: node profiles (small YAML files) and the Node objects they describe.

A profile (``hack/nodes/default.yaml`` documents the format) lists groups of identical nodes with their labels,
taints and capacity. ``LocalCluster`` creates the Node objects rendered here and runs kube-scheduler and kwok:
kwok plays the kubelet of every Node carrying ``MANAGED_LABEL`` (``hack/kwok-tools/stages.yaml`` says how a pod
lives on one; ``RUN_TIME_ANNOTATION`` sets when it succeeds). This module reads and checks profiles and renders
objects; it starts nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from webhook.api.quantity import InvalidQuantity, parse_quantity

REPO_ROOT = Path(__file__).resolve().parents[2]
PROFILE_DIR = REPO_ROOT / "hack" / "nodes"
STAGES_FILE = REPO_ROOT / "hack" / "kwok-tools" / "stages.yaml"
DEFAULT_PROFILE = "default"
NO_NODES = "none"

MANAGED_LABEL = "turnstile.x-k8s.io/simulated-node"  # kwok manages the nodes with this label set to "true"
GROUP_LABEL = "turnstile.x-k8s.io/node-group"  # the profile group a node comes from
RUN_TIME_ANNOTATION = "turnstile.x-k8s.io/run-time"  # on a pod: seconds ("90") or a Go duration ("1m30s")

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_MAX_NODES = 1000  # a typo in a count should not try to create a million nodes

JSON = dict[str, Any]


class NodeProfileError(ValueError):
    """The profile cannot be used; ``problems`` has one line per problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid node profile {source}: {len(problems)} problem(s)\n{lines}")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class NodeGroup:
    name: str
    count: int
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, str]

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


@dataclass(frozen=True)
class NodeProfile:
    source: str
    groups: tuple[NodeGroup, ...]

    def node_names(self) -> list[str]:
        return [n for g in self.groups for n in g.node_names()]


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def resolve(value: str) -> Path | None:
    """``--nodes`` to a profile file: ``none`` is no nodes, an existing path is itself, else a name in hack/nodes/."""
    if value == NO_NODES:
        return None
    path = Path(value)
    if path.is_file():
        return path
    named = PROFILE_DIR / f"{value}.yaml"
    if "/" not in value and named.is_file():
        return named
    names = ", ".join([*available_profiles(), NO_NODES])
    raise NodeProfileError(value, [f"no such file, and no profile of that name in {PROFILE_DIR} (there are: {names})"])


def load(path: Path) -> NodeProfile:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise NodeProfileError(str(path), [str(exc)]) from exc
    return parse(data, source=str(path))


def parse(data: object, *, source: str) -> NodeProfile:
    """The profile in ``data`` (a loaded YAML document), with every problem reported at once."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        raise NodeProfileError(source, ["the file must be a mapping with a `nodes` list"])
    for extra in sorted(set(data) - {"nodes"}):
        problems.append(f"{extra}: unknown field (only `nodes` is allowed)")
    raw_groups = data.get("nodes")
    if not isinstance(raw_groups, list) or not raw_groups:
        problems.append("nodes: must be a non-empty list of node groups")
        raw_groups = []
    groups = []
    for i, raw in enumerate(raw_groups):
        group = _group(raw, f"nodes[{i}]", problems)
        if group is not None:
            groups.append(group)
    seen: set[str] = set()
    for g in groups:
        if g.name in seen:
            problems.append(f"nodes: the group name {g.name!r} is used twice")
        seen.add(g.name)
    total = sum(g.count for g in groups)
    if total > _MAX_NODES:
        problems.append(f"nodes: {total} nodes in total, at most {_MAX_NODES}")
    if problems:
        raise NodeProfileError(source, problems)
    return NodeProfile(source=source, groups=tuple(groups))


def _group(raw: object, where: str, problems: list[str]) -> NodeGroup | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping with name, count and capacity")
        return None
    before = len(problems)
    for extra in sorted(set(raw) - {"name", "count", "labels", "taints", "capacity"}):
        problems.append(f"{where}.{extra}: unknown field")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > 50:
        problems.append(f"{where}.name: must be lowercase letters, digits and '-' (at most 50), got {name!r}")
    count = raw.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        problems.append(f"{where}.count: must be an integer of at least 1, got {count!r}")
    labels = _strings(raw.get("labels") or {}, f"{where}.labels", problems)
    for key in labels:
        if key in (MANAGED_LABEL, GROUP_LABEL, "kubernetes.io/hostname"):
            problems.append(f"{where}.labels.{key}: set by Turnstile, leave it out")
    taints = _taints(raw.get("taints") or [], f"{where}.taints", problems)
    capacity = _strings(raw.get("capacity"), f"{where}.capacity", problems)
    for resource, value in capacity.items():
        try:
            parse_quantity(value)
        except InvalidQuantity:
            problems.append(f"{where}.capacity.{resource}: {value!r} is not a quantity")
    for required in ("cpu", "memory"):
        if required not in capacity and isinstance(raw.get("capacity"), Mapping):
            problems.append(f"{where}.capacity.{required}: required")
    if len(problems) > before:
        return None
    assert isinstance(name, str)
    assert isinstance(count, int)
    return NodeGroup(name=name, count=count, labels=labels, taints=taints, capacity={"pods": "110"} | dict(capacity))


def _strings(raw: object, where: str, problems: list[str]) -> dict[str, str]:
    """A mapping of strings; numbers are accepted as values (``cpu: 16``) and kept as written."""
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping")
        return {}
    out: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append(f"{where}.{key}: must be a string, got {value!r}")
            continue
        out[key] = str(value)
    return out


def _taints(raw: object, where: str, problems: list[str]) -> tuple[Taint, ...]:
    if not isinstance(raw, list):
        problems.append(f"{where}: must be a list of {{key, value, effect}}")
        return ()
    taints = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str) or not item["key"]:
            problems.append(f"{at}: must be a mapping with a non-empty key")
            continue
        for extra in sorted(set(item) - {"key", "value", "effect"}):
            problems.append(f"{at}.{extra}: unknown field")
        effect = item.get("effect")
        if effect not in _EFFECTS:
            problems.append(f"{at}.effect: must be one of {', '.join(_EFFECTS)}, got {effect!r}")
            continue
        value = item.get("value", "")
        if not isinstance(value, str):
            problems.append(f"{at}.value: must be a string, got {value!r}")
            continue
        taints.append(Taint(key=item["key"], value=value, effect=str(effect)))
    return tuple(taints)


def node_objects(profile: NodeProfile) -> list[JSON]:
    """The Node objects to create: status carries capacity and allocatable, which kwok keeps as given."""
    nodes = []
    for group in profile.groups:
        for name in group.node_names():
            labels = dict(group.labels) | {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                GROUP_LABEL: group.name,
                MANAGED_LABEL: "true",
            }
            taints = [
                {"key": t.key, "effect": t.effect} | ({"value": t.value} if t.value else {}) for t in group.taints
            ]
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels},
                    "spec": {"taints": taints} if taints else {},
                    "status": {"capacity": dict(group.capacity), "allocatable": dict(group.capacity)},
                }
            )
    return nodes
