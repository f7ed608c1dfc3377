"""The layer table of DESIGN.md, checked on the source: one contract for every package of ``webhook/``.

Each inner layer names the layers of ours it may import; everything else of ours is refused, including the edges
(configuration, metrics exporter, servers, CLI, the local cluster). Third-party rules ride along: the pure layers
do no I/O, only ``webhook/kube`` imports the Kubernetes client, only ``webhook/metrics.py`` imports Prometheus, and
production code never imports the tests. Imports inside functions count like any other. Finally no two modules of
the package import each other, directly or through others.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "webhook"

# Libraries that do I/O, read the clock or drive an event loop.
IO_MODULES = frozenset(
    {"aiohttp", "asyncio", "cryptography", "kubernetes_asyncio", "os", "prometheus_client", "socket", "ssl"}
    | {"subprocess", "time", "urllib", "yaml"}
)

# Inner layer -> the layers of ours it may import (besides itself). ``logs`` holds the structured-logging helpers
# every I/O layer uses; it imports nothing of ours.
ALLOWED: dict[str, frozenset[str]] = {
    "api": frozenset(),
    "core": frozenset({"api"}),
    "jobs": frozenset({"api", "core"}),
    "admission": frozenset({"api", "core", "jobs"}),
    "kube": frozenset({"api"}),
    "controller": frozenset({"api", "core", "jobs", "kube", "logs"}),
    "logs": frozenset(),
}
PURE = ("api", "core", "jobs")
# The edges may import any layer; nothing inner imports them.
EDGES = frozenset(
    {"__main__", "cli", "config", "metrics", "pki", "runner", "server", "tls", "local", "usercli"}
    | {"visibility", "dashboard", "connections", "memtrim", "reconcilerprocess", "reviewpool", "runoptions"}
    | {"gcpolicy", "requesttimes", "schedslice", "childprocess"}
)


def imported_modules(path: Path) -> set[str]:
    """Absolute module names a file imports, anywhere in it (``from x import y`` yields ``x`` and ``x.y``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def layer_of(module: str) -> str | None:
    """``webhook.core.quota`` -> ``core``; ``webhook.metrics`` -> ``metrics``; not ours -> None."""
    parts = module.split(".")
    if parts[0] != "webhook" or len(parts) < 2:
        return None
    return parts[1]


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts), path


def test_every_package_is_in_the_table() -> None:
    found = {layer_of(name) for name, _ in modules()} - {None}
    assert found <= set(ALLOWED) | EDGES, f"packages missing from the layer table: {found - set(ALLOWED) - EDGES}"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_inner_layers_import_only_what_the_table_allows(layer: str) -> None:
    bad = []
    for name, path in modules():
        if layer_of(name) != layer:
            continue
        for module in imported_modules(path):
            target = layer_of(module)
            if target is not None and target != layer and target not in ALLOWED[layer] and module != "webhook":
                bad.append(f"{name} imports {module}")
    assert bad == []


@pytest.mark.parametrize("layer", PURE)
def test_pure_layers_do_no_io(layer: str) -> None:
    bad = [
        f"{name} imports {module}"
        for name, path in modules()
        if layer_of(name) == layer
        for module in imported_modules(path)
        if module.split(".")[0] in IO_MODULES
    ]
    assert bad == []


@pytest.mark.parametrize(
    ("library", "owner"),
    [
        pytest.param("kubernetes_asyncio", "webhook.kube", id="the-client-only-in-kube"),
        pytest.param("prometheus_client", "webhook.metrics", id="prometheus-only-in-metrics"),
    ],
)
def test_a_library_has_one_owner(library: str, owner: str) -> None:
    bad = [
        f"{name} imports {module}"
        for name, path in modules()
        if not (name == owner or name.startswith(owner + "."))
        for module in imported_modules(path)
        if module.split(".")[0] == library
    ]
    assert bad == []


def test_production_code_never_imports_the_tests() -> None:
    bad = [
        f"{name} imports {module}"
        for name, path in modules()
        for module in imported_modules(path)
        if module.split(".")[0] == "tests"
    ]
    assert bad == []


def import_graph() -> dict[str, set[str]]:
    names = {name for name, _ in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules():
        targets = set()
        for module in imported_modules(path):
            # ``from webhook.local import nodes`` names the module webhook.local.nodes, not the package.
            if module in names and module != name and module != name.rsplit(".", 1)[0]:
                targets.add(module)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(import_graph()) == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("import asyncio\nfrom webhook.controller import cache\n\ndef f():\n    import tests.doubles\n")
    assert imported_modules(source) == {"asyncio", "webhook.controller", "webhook.controller.cache", "tests.doubles"}
    assert layer_of("webhook.controller.cache") == "controller"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
