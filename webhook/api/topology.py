"""A Workload's topology assignment in its two wire encodings: v1beta1 ``domains`` and v1beta2 ``slices``.

Owns: ``domains_to_slices`` and ``slices_to_domains`` (pure, dict in, dict out) and ``TopologyEncodingError``.
v1beta1 lists every domain as ``{values: [one per level], count}``. v1beta2 groups domains into slices; in a slice,
each level's values are either one ``universal`` string or ``individual`` roots between an optional common
``prefix`` and ``suffix``, and pod counts are one ``universal`` number or one ``individual`` number per domain.
Domains are numbered by slice order, then by position inside the slice.
Must not: do I/O, or know anything of a Workload beyond this one field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

# The v1beta2 schema allows at most this many roots / individual pod counts in one slice.
MAX_DOMAINS_PER_SLICE: Final = 100_000


class TopologyEncodingError(ValueError):
    """A topology assignment that cannot be re-encoded (its shape breaks the rules of its own version)."""


def domains_to_slices(assignment: Mapping[str, Any]) -> dict[str, Any]:
    """A v1beta1 ``{levels, domains}`` as a valid v1beta2 ``{levels, slices}``.

    Kueue calls the choice of encoding an implementation detail. This one is Kueue's single-slice encoding
    (universal values and pod counts where all domains agree, else the longest common prefix and suffix, never
    overlapping), cut into several slices only when a slice would exceed the schema's 100,000 domains.
    """
    levels = list(assignment.get("levels") or [])
    domains = list(assignment.get("domains") or [])
    for i, domain in enumerate(domains):
        values = domain.get("values") if isinstance(domain, Mapping) else None
        if not isinstance(values, list) or len(values) != len(levels):
            raise TopologyEncodingError(f"domains[{i}].values must have one value per level ({len(levels)})")
        if not isinstance(domain.get("count"), int):
            raise TopologyEncodingError(f"domains[{i}].count must be an integer")
    slices = [
        _slice(len(levels), domains[start : start + MAX_DOMAINS_PER_SLICE])
        for start in range(0, len(domains), MAX_DOMAINS_PER_SLICE)
    ]
    return {"levels": levels, "slices": slices}


def slices_to_domains(assignment: Mapping[str, Any]) -> dict[str, Any]:
    """A v1beta2 ``{levels, slices}`` expanded to v1beta1 ``{levels, domains}``, one entry per domain, in order."""
    levels = list(assignment.get("levels") or [])
    domains: list[dict[str, Any]] = []
    for s, piece in enumerate(assignment.get("slices") or []):
        where = f"slices[{s}]"
        count = piece.get("domainCount")
        if not isinstance(count, int) or count < 1:
            raise TopologyEncodingError(f"{where}.domainCount must be a positive integer")
        per_level = piece.get("valuesPerLevel") or []
        if len(per_level) != len(levels):
            raise TopologyEncodingError(f"{where}.valuesPerLevel must have one entry per level ({len(levels)})")
        columns = [_expand_values(v, count, f"{where}.valuesPerLevel[{i}]") for i, v in enumerate(per_level)]
        pod_counts = _expand_counts(piece.get("podCounts") or {}, count, f"{where}.podCounts")
        for d in range(count):
            domains.append({"values": [column[d] for column in columns], "count": pod_counts[d]})
    return {"levels": levels, "domains": domains}


def _slice(level_count: int, domains: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    values_per_level = [_compact([d["values"][level] for d in domains]) for level in range(level_count)]
    counts = [d["count"] for d in domains]
    pod_counts: dict[str, Any] = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    return {"domainCount": len(domains), "valuesPerLevel": values_per_level, "podCounts": pod_counts}


def _compact(values: Sequence[str]) -> dict[str, Any]:
    first = values[0]
    if all(v == first for v in values):
        return {"universal": first}
    prefix, suffix = _common_prefix(values), _common_prefix([v[::-1] for v in values])[::-1]
    shortest = min(len(v) for v in values)
    if len(prefix) + len(suffix) > shortest:  # e.g. "ababa" and "aba": the two must not overlap
        prefix = prefix[: shortest - len(suffix)]
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [v[len(prefix) : len(v) - len(suffix)] for v in values]
    return {"individual": individual}


def _common_prefix(values: Sequence[str]) -> str:
    low, high = min(values), max(values)  # in sorted order, the common prefix of all is that of the two ends
    for i, char in enumerate(low):
        if char != high[i]:
            return low[:i]
    return low


def _expand_values(level: Mapping[str, Any], count: int, where: str) -> list[str]:
    universal, individual = level.get("universal"), level.get("individual")
    if (universal is None) == (individual is None):
        raise TopologyEncodingError(f"{where}: exactly one of universal and individual must be set")
    if universal is not None:
        return [str(universal)] * count
    assert individual is not None
    roots = individual.get("roots") or []
    if len(roots) != count:
        raise TopologyEncodingError(f"{where}.individual.roots must have domainCount ({count}) items")
    prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
    return [f"{prefix}{root}{suffix}" for root in roots]


def _expand_counts(pod_counts: Mapping[str, Any], count: int, where: str) -> list[int]:
    universal, individual = pod_counts.get("universal"), pod_counts.get("individual")
    if (universal is None) == (individual is None):
        raise TopologyEncodingError(f"{where}: exactly one of universal and individual must be set")
    if universal is not None:
        return [int(universal)] * count
    assert individual is not None
    if len(individual) != count:
        raise TopologyEncodingError(f"{where}.individual must have domainCount ({count}) items")
    return [int(n) for n in individual]
