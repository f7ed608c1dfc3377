"""The layering rules of DESIGN.md, checked on the source: pure layers import no I/O libraries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "webhook"

# Libraries that do I/O, read the clock or drive an event loop.
IO_MODULES = {
    "aiohttp",
    "asyncio",
    "cryptography",
    "kubernetes_asyncio",
    "os",
    "prometheus_client",
    "socket",
    "ssl",
    "subprocess",
    "time",
    "webhook.controller",
    "webhook.kube",
    "webhook.admission",
}

# layer -> packages of ours it may not import (imports point downward only)
UPWARD = {
    "api": {"webhook.core", "webhook.jobs", "webhook.admission", "webhook.controller", "webhook.kube"},
    "core": {"webhook.jobs", "webhook.admission", "webhook.controller", "webhook.kube"},
    "jobs": {"webhook.admission", "webhook.controller", "webhook.kube", "aiohttp", "kubernetes_asyncio"},
    "admission": {"webhook.controller", "webhook.kube", "kubernetes_asyncio"},
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def violations(layer: str, forbidden: set[str]) -> list[str]:
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in imported_modules(path):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    return bad


@pytest.mark.parametrize("layer", ["api", "core"])
def test_pure_layers_import_no_io(layer: str) -> None:
    assert violations(layer, IO_MODULES) == []


@pytest.mark.parametrize("layer", sorted(UPWARD))
def test_imports_point_downward(layer: str) -> None:
    assert violations(layer, UPWARD[layer]) == []


def test_only_kube_imports_the_client() -> None:
    bad = [
        v
        for layer in sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "kube")
        for v in violations(layer, {"kubernetes_asyncio"})
    ]
    top = [
        f"{p.name} imports kubernetes_asyncio"
        for p in PACKAGE.glob("*.py")
        if "kubernetes_asyncio" in {m.split(".")[0] for m in imported_modules(p)}
    ]
    assert bad + top == []


def test_checker_sees_a_violation(tmp_path: Path) -> None:
    # The rule must be able to fail: an import of asyncio is found.
    source = tmp_path / "probe.py"
    source.write_text("import asyncio\nfrom aiohttp import web\n")
    assert imported_modules(source) == {"asyncio", "aiohttp"}
