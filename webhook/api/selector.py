"""Kubernetes label selectors: parsing and matching, as pure functions.

Owns: ``LabelSelector`` (matchLabels + matchExpressions with In, NotIn, Exists, DoesNotExist) and ``matches``.
Must not: decide what a missing selector means; callers do (a ClusterQueue's nil namespaceSelector matches no
namespace, while an empty selector ``{}`` matches all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from webhook.api import wire

OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """All requirements must hold (logical AND); no requirements matches everything."""

    requirements: tuple[Requirement, ...] = ()


EVERYTHING: Final = LabelSelector()


def parse_label_selector(raw: object, path: str = "selector") -> LabelSelector:
    obj = wire.mapping(raw, path)
    reqs = [
        Requirement(k, "In", frozenset({v}))
        for k, v in wire.string_map(obj.get("matchLabels"), f"{path}.matchLabels").items()
    ]
    for i, expr in enumerate(wire.items(obj.get("matchExpressions"), f"{path}.matchExpressions")):
        where = f"{path}.matchExpressions[{i}]"
        e = wire.mapping(expr, where)
        op = wire.string(e.get("operator"), f"{where}.operator")
        if op not in OPERATORS:
            raise wire.InvalidObject(f"{where}.operator", f"unknown operator {op!r}")
        values = frozenset(wire.string(v, f"{where}.values") for v in wire.items(e.get("values"), f"{where}.values"))
        if op in ("In", "NotIn") and not values:
            raise wire.InvalidObject(f"{where}.values", f"must be non-empty for {op}")
        if op in ("Exists", "DoesNotExist") and values:
            raise wire.InvalidObject(f"{where}.values", f"must be empty for {op}")
        reqs.append(Requirement(wire.string(e.get("key"), f"{where}.key"), op, values))
    return LabelSelector(tuple(reqs))


def matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    return all(_holds(r, labels) for r in selector.requirements)


def _holds(req: Requirement, labels: Mapping[str, str]) -> bool:
    present = req.key in labels
    if req.operator == "In":
        return present and labels[req.key] in req.values
    if req.operator == "NotIn":
        # As in Kubernetes: a missing label satisfies NotIn.
        return not present or labels[req.key] not in req.values
    if req.operator == "Exists":
        return present
    return not present
