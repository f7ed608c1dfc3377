"""How much of ``webhook/`` still reads Kubernetes objects as raw dicts: the two counts issue 15 tracks, repeatable.

Counted on the syntax tree of every ``webhook/**/*.py`` (no imports run):
- **signatures**: ``def``/``async def`` with a parameter or return annotation naming ``dict[str, Any]`` or
  ``Mapping[str, Any]`` (anywhere inside it: ``list[dict[str, Any]]`` counts), directly or through a module's
  alias of one (``JSON = dict[str, Any]``, ``Obj = Mapping[str, Any]``, ``Object: TypeAlias = dict[str, Any]``,
  ``Object`` imported from ``webhook.kube.objects``, and ``Raw`` or ``ObjectLike`` (a view or the raw object, now
  taken only by three builders called from outside the reconciler) imported from ``webhook.api.views``); each
  function counts once, however many such
  annotations it has. Printed with the literal-only count (aliases not followed) beside it.
- **``.get(...) or {}`` chains**: every ``x.get(...) or {}`` expression (an ``or`` whose first operand is a call of
  a method named ``get`` and whose last operand is an empty dict literal), and beside it those read further with
  another ``.get`` (``(x.get("a") or {}).get("b")``).
Per package and in all. Printed, never asserted. Usage: ``.venv/bin/python -m bench.rawdicts``.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "webhook"
RAW = {"dict[str, Any]", "Mapping[str, Any]", "typing.Mapping[str, Any]", "collections.abc.Mapping[str, Any]"}
# Aliases defined once and imported by name elsewhere, by the module defining them.
SHARED_ALIASES = {
    "webhook.kube.objects": {"Object", "MergePatch", "JsonPatch"},
    "webhook.api.views": {"Raw", "ObjectLike"},
}


def aliases(tree: ast.Module) -> set[str]:
    """Module-level names bound to an annotation mentioning a raw dict, and the shared aliases it imports."""
    found: set[str] = set()
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        if target is not None and value is not None and mentions(value, found):
            found.add(target)
        if isinstance(node, ast.ImportFrom) and node.module in SHARED_ALIASES:
            found |= {a.asname or a.name for a in node.names if a.name in SHARED_ALIASES[node.module]}
    return found


def mentions(annotation: ast.expr, names: set[str]) -> bool:
    for sub in ast.walk(annotation):
        if isinstance(sub, ast.Subscript) and ast.unparse(sub) in RAW:
            return True
        if isinstance(sub, ast.Name) and sub.id in names:
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):  # a string annotation
            try:
                parsed = ast.parse(sub.value, mode="eval").body
            except SyntaxError:
                continue
            if mentions(parsed, names):
                return True
    return False


def annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    args = fn.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    found = [a.annotation for a in every if a is not None and a.annotation is not None]
    return found + ([fn.returns] if fn.returns is not None else [])


def get_or_empty(node: ast.AST) -> bool:
    if not isinstance(node, ast.BoolOp) or not isinstance(node.op, ast.Or):
        return False
    first, last = node.values[0], node.values[-1]
    return (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "get"
        and isinstance(last, ast.Dict)
        and not last.keys
    )


def main() -> None:
    signatures: Counter[str] = Counter()
    literal: Counter[str] = Counter()
    chains: Counter[str] = Counter()
    chained: Counter[str] = Counter()
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        package = path.relative_to(ROOT).parts[0] if len(path.relative_to(ROOT).parts) > 1 else "(top level)"
        names = aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                annotated = annotations(node)
                if any(mentions(a, names) for a in annotated):
                    signatures[package] += 1
                if any(mentions(a, set()) for a in annotated):
                    literal[package] += 1
            if get_or_empty(node):
                chains[package] += 1
            if isinstance(node, ast.Attribute) and node.attr == "get" and get_or_empty(node.value):
                chained[package] += 1
    print(f"{'package':<14} {'signatures':>10} {'(literal)':>10} {'.get() or {}':>13} {'(then .get)':>12}")
    for package in sorted(set(signatures) | set(chains) | set(literal)):
        counts = signatures[package], literal[package], chains[package], chained[package]
        print(f"{package:<14} {counts[0]:>10} {counts[1]:>10} {counts[2]:>13} {counts[3]:>12}")
    total = [sum(c.values()) for c in (signatures, literal, chains, chained)]
    print(f"{'all':<14} {total[0]:>10} {total[1]:>10} {total[2]:>13} {total[3]:>12}")


if __name__ == "__main__":
    main()
