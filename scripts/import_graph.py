"""ccmemory's module import graph, checked: no core module imports an entry layer, no import cycle.

Run ``python3 scripts/import_graph.py`` (standard library only; it parses ``src/ccmemory`` with
:mod:`ast` and imports nothing of it). Every import counts, including those inside functions
(the lazy imports that keep the hooks fast are still dependencies); imports under
``if TYPE_CHECKING:`` are not, as they never run. Three rules:

- **layers**: a core module (anything outside ``ccmemory.hooks``, ``ccmemory.mcp``,
  ``ccmemory.ui`` and ``ccmemory.cli``) never imports from those entry layers, so the layers
  can change without the store, search or embeddings noticing;
- **entry layers apart**: ``hooks``, ``mcp`` and ``ui`` do not import one another (what two of
  them share lives in the core below both); only ``cli``, the front of everything, may reach
  into the others (``ccmemory.__main__`` belongs to ``cli``);
- **no cycles**: two modules never import each other, directly or through others.

Known violations are listed, one edge ``importer -> imported`` per line with its reason after
``#``, in ``scripts/import_graph_known.txt``; they are reported but do not fail the check. Any
other violation exits 1, and so does a listed edge that no longer exists (delete its line).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "ccmemory"
ENTRY_LAYERS = ("ccmemory.hooks", "ccmemory.mcp", "ccmemory.ui", "ccmemory.cli")
#: The layer that may import the other entry layers, and modules that belong to it by another name.
FRONT = "ccmemory.cli"
FRONT_ALIASES = ("ccmemory.__main__",)
KNOWN = Path(__file__).with_name("import_graph_known.txt")

Edge = tuple[str, str]


def module_files(source: Path) -> dict[str, Path]:
    """Every module of the package under ``source`` (the ``src`` directory) by dotted name."""
    modules = {}
    for path in sorted((source / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its body (functions included)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, is_package, node.module, node.level)
            # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` imports mod.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            resolved = _known_module(target, modules)
            if resolved and resolved != name:
                found.add(resolved)
    return found


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    nodes, pending = [], [tree]
    while pending:
        node = pending.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return nodes


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _absolute(name: str, is_package: bool, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    package = name.split(".") if is_package else name.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _known_module(target: str, modules: dict[str, Path]) -> str | None:
    """``target`` or its nearest enclosing module that belongs to the package; None for other packages."""
    parts = target.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def graph(source: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = module_files(source)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> str | None:
    if module in FRONT_ALIASES:
        return FRONT
    return next((layer for layer in ENTRY_LAYERS if module == layer or module.startswith(layer + ".")), None)


def layer_violations(edges: dict[str, set[str]]) -> list[Edge]:
    """Edges from a core module into an entry layer, or from one entry layer (not the front) into another."""
    return sorted((src, dst) for src, targets in edges.items() if _layer(src) != FRONT
                  for dst in targets if _layer(dst) not in (None, _layer(src)))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(components)


def cycle_edges(edges: dict[str, set[str]], component: list[str]) -> list[Edge]:
    """The edges that keep ``component`` a cycle (those between its members)."""
    members = set(component)
    return sorted((src, dst) for src in component for dst in edges[src] if dst in members)


def read_known(path: Path) -> dict[Edge, str]:
    """The allowed edges of ``path``: ``a -> b  # reason`` per line; blank lines and ``#`` lines skipped."""
    known = {}
    if not path.exists():
        return known
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        edge, _, reason = line.partition("#")
        if not edge.strip():
            continue
        src, arrow, dst = edge.partition("->")
        if not arrow or not reason.strip():
            raise SystemExit(f"{path}:{number}: expected 'importer -> imported  # reason', got {line!r}")
        known[(src.strip(), dst.strip())] = reason.strip()
    return known


def check(source: Path, known: dict[Edge, str]) -> tuple[list[str], int]:
    """The report's lines and the exit status (1 if a violation is not in ``known`` or a known one is gone)."""
    edges = graph(source)
    lines = [f"{len(edges)} modules, {sum(len(t) for t in edges.values())} import edges "
             "(lazy imports inside functions included)"]
    bad = 0
    used: set[Edge] = set()

    layered = layer_violations(edges)
    lines.append(f"core -> entry layer ({', '.join(ENTRY_LAYERS)}) or between entry layers: {len(layered)} edge(s)")
    for edge in layered:
        used.add(edge)
        bad += _line(lines, edge, known)

    found = cycles(edges)
    lines.append(f"import cycles: {len(found)}")
    for component in found:
        lines.append(f"  cycle among {', '.join(component)}:")
        component_edges = cycle_edges(edges, component)
        if not any(edge in known for edge in component_edges):
            bad += 1
            lines.append("    NEW: no edge of this cycle is listed as known")
        for edge in component_edges:
            if edge in known:
                used.add(edge)
            lines.append(f"    {edge[0]} -> {edge[1]}" + (f"  (known: {known[edge]})" if edge in known else ""))

    stale = sorted(set(known) - used)
    for edge in stale:
        bad += 1
        lines.append(f"STALE: {edge[0]} -> {edge[1]} is listed in {KNOWN.name} but is no violation now: delete it")
    lines.append("OK" if not bad else f"FAILED: {bad} new or stale violation(s)")
    return lines, 1 if bad else 0


def _line(lines: list[str], edge: Edge, known: dict[Edge, str]) -> int:
    if edge in known:
        lines.append(f"  known: {edge[0]} -> {edge[1]}  ({known[edge]})")
        return 0
    lines.append(f"  NEW: {edge[0]} -> {edge[1]}")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=REPO / "src", help="the directory holding ccmemory/")
    parser.add_argument("--known", type=Path, default=KNOWN, help="the allow-list of known violations")
    parser.add_argument("--edges", action="store_true", help="also print every module's imports")
    args = parser.parse_args(argv)
    if args.edges:
        for module, targets in sorted(graph(args.source).items()):
            print(f"{module}: {', '.join(sorted(targets)) or '-'}")
    lines, status = check(args.source, read_known(args.known))
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
