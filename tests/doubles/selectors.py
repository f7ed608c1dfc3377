"""Label and field selectors as the API server understands them, matched in memory.

Owns: parsing the string form (``a=b,c!=d,e,!f,g in (h,i),j notin (k)``) and matching it against
labels; the fake client uses it to filter lists and watches like the server does.
Must not: do I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[[Mapping[str, str]], bool]

# One requirement: a key, then an operator and value(s), or "!key" / "key" for (non-)existence.
_SET = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*$")
_CMP = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=,()]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=,()]+)\s*$")


def _requirements(selector: str) -> list[str]:
    # Split on commas that are not inside a parenthesised value set.
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Predicate:
    if m := _SET.match(text):
        key, values = m["key"], {v.strip() for v in m["values"].split(",")}
        if m["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _CMP.match(text):
        key, value = m["key"], m["value"]
        if m["op"] == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _EXISTS.match(text):
        key = m["key"]
        if m["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ValueError(f"unparsable selector requirement {text!r}")


def parse_label_selector(selector: str | None) -> Predicate:
    """A predicate over a label mapping; an empty or None selector matches everything."""
    requirements = [_requirement(r) for r in _requirements(selector or "")]
    return lambda labels: all(req(labels) for req in requirements)


def parse_field_selector(selector: str | None) -> Callable[[dict[str, Any]], bool]:
    """A predicate over an object for ``path=value`` / ``path!=value`` field selectors (dotted paths)."""
    checks: list[tuple[list[str], str, bool]] = []
    for text in _requirements(selector or ""):
        m = _CMP.match(text)
        if not m:
            raise ValueError(f"unparsable field selector requirement {text!r}")
        checks.append((m["key"].split("."), m["value"], m["op"] != "!="))

    def matches(obj: dict[str, Any]) -> bool:
        for path, value, equal in checks:
            node: Any = obj
            for step in path:
                node = node.get(step) if isinstance(node, dict) else None
            if (str(node if node is not None else "") == value) != equal:
                return False
        return True

    return matches
