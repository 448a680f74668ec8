"""hpuprof's, hpusim's and hpudash's internal import graph, as Python runs it.

Every `import` counts, at module level or inside a function (a deferred import still runs, and
still closes a cycle at run time), and under `if TYPE_CHECKING:` too (the type checker follows it:
the two modules still know each other). Prints the import
cycles (strongly connected groups of modules) and how many internal imports each package defers
into functions.

    python tools/import_graph.py            # cycles and counts
    python tools/import_graph.py --deferred hpusim   # every deferred internal import of hpusim
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parents[1]
PACKAGES: dict[str, Path] = {
    "hpuprof": REPO / "hpuprof",
    "hpusim": REPO / "runtime" / "hpusim",
    "hpudash": REPO / "dashboards" / "hpudash",
}


@dataclass(frozen=True)
class Import:
    """One internal import: `source` imports `target` (both module names)."""

    source: str
    target: str
    line: int
    deferred: bool  # inside a function body


def modules() -> dict[str, Path]:
    """Module name -> file, for every module of the three packages."""
    out: dict[str, Path] = {}
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that `name` (a module or a module attribute) lies in."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _walk(node: ast.AST, chain: list[ast.AST]) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    yield node, chain
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, [*chain, node])


def imports(known: dict[str, Path] | None = None) -> list[Import]:
    """Every internal import of the three packages."""
    known = known or modules()
    found: list[Import] = []
    for module, path in known.items():
        package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node, chain in _walk(ast.parse(path.read_text(encoding="utf-8")), []):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package_parts[: len(package_parts) - (node.level - 1)]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    origin = node.module or ""
                # `from pkg import sub` runs pkg's __init__ as well as sub
                names = [origin, *(f"{origin}.{alias.name}" for alias in node.names)]
            else:
                continue
            deferred = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in chain)
            targets = {t for t in (_resolve(name, known) for name in names) if t and t != module}
            found.extend(Import(module, t, node.lineno, deferred) for t in sorted(targets))
    return found


def cycles(found: list[Import]) -> list[list[str]]:
    """The import cycles: groups of modules that import each other, largest first."""
    graph = nx.DiGraph()
    graph.add_edges_from((i.source, i.target) for i in found)
    groups = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    return sorted(groups, key=lambda g: (-len(g), g))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deferred", default="", help="list one package's deferred imports")
    args = parser.parse_args(argv)
    found = imports()
    for group in cycles(found):
        print(f"cycle of {len(group)}: {', '.join(group)}")
    for package in PACKAGES:
        inner = [i for i in found if i.source.split(".")[0] == i.target.split(".")[0] == package]
        deferred = sum(i.deferred for i in inner)
        share = deferred / len(inner) if inner else 0.0
        print(f"{package}: {len(inner)} internal imports, {deferred} deferred ({share:.0%})")
    if args.deferred:
        for i in found:
            if i.deferred and i.source.split(".")[0] == args.deferred:
                print(f"  {PACKAGES[args.deferred].parent}/{i.source}:{i.line} -> {i.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
