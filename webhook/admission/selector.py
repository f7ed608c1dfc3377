"""Kubernetes label selectors (``matchLabels`` + ``matchExpressions``): checking one and matching labels.

Used for the namespace policy, the configuration's ``managedJobsNamespaceSelector`` and a ClusterQueue's
``namespaceSelector``. Must not: read the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NotRequired, TypedDict

from webhook.admission import names
from webhook.admission.fielderror import FieldError, child, index, invalid, key, not_supported, required
from webhook.api.selector import LabelSelector, Requirement, matches

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class RequirementWire(TypedDict):
    key: str
    operator: str
    values: NotRequired[list[str]]


class LabelSelectorWire(TypedDict, total=False):
    matchLabels: dict[str, str]
    matchExpressions: list[RequirementWire]


class Selector(LabelSelector):
    """A checked selector (the empty one matches everything); matching is ``webhook.api.selector``'s."""

    __slots__ = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return matches(self, labels)


def problems(raw: object, path: str) -> list[FieldError]:
    """Everything wrong with a selector as written (empty when it can be compiled)."""
    if not isinstance(raw, dict):
        return [invalid(path, raw, "must be a label selector object")]
    errors: list[FieldError] = []
    unknown = set(raw) - {"matchLabels", "matchExpressions"}
    errors += [invalid(child(path, k), raw[k], "unknown field") for k in sorted(unknown)]
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, dict):
        errors.append(invalid(child(path, "matchLabels"), match_labels, "must map label keys to values"))
        match_labels = {}
    for k, v in match_labels.items():
        where = key(child(path, "matchLabels"), k)
        if problem := names.qualified_name(k):
            errors.append(invalid(where, k, problem))
        if not isinstance(v, str):
            errors.append(invalid(where, v, "must be a string"))
        elif problem := names.label_value(v):
            errors.append(invalid(where, v, problem))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return [*errors, invalid(child(path, "matchExpressions"), expressions, "must be a list")]
    for i, expr in enumerate(expressions):
        errors += _requirement_problems(expr, index(child(path, "matchExpressions"), i))
    return errors


def _requirement_problems(expr: object, path: str) -> list[FieldError]:
    if not isinstance(expr, dict):
        return [invalid(path, expr, "must be an object with key, operator and values")]
    errors: list[FieldError] = []
    k = expr.get("key")
    if not isinstance(k, str) or not k:
        errors.append(required(child(path, "key"), "a label key is required"))
    elif problem := names.qualified_name(k):
        errors.append(invalid(child(path, "key"), k, problem))
    operator = expr.get("operator")
    values = expr.get("values") or []
    if operator not in OPERATORS:
        errors.append(not_supported(child(path, "operator"), operator, OPERATORS))
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        errors.append(invalid(child(path, "values"), values, "must be a list of strings"))
    elif operator in ("In", "NotIn") and not values:
        errors.append(required(child(path, "values"), f"must be non-empty when operator is {operator}"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(invalid(child(path, "values"), values, f"must be empty when operator is {operator}"))
    return errors


def compile_selector(raw: LabelSelectorWire) -> Selector:
    """A selector from its wire form; call ``problems`` first, this assumes a valid one."""
    reqs = [Requirement(k, "In", frozenset({v})) for k, v in sorted((raw.get("matchLabels") or {}).items())]
    for expr in raw.get("matchExpressions") or []:
        reqs.append(Requirement(expr["key"], expr["operator"], frozenset(expr.get("values") or ())))
    return Selector(tuple(reqs))
