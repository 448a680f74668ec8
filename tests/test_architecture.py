"""The layering rules of docs/architecture.md, checked on the source.

- No import cycles among hpuprof's, hpusim's and hpudash's modules, counting imports inside
  functions (they run, so they close a cycle at run time as much as top-level ones do) and
  those under `if TYPE_CHECKING:` (tools/import_graph.py builds the graph).
- No function over 120 lines, except the hot paths named in `LONG_HOT_PATHS`, each of whose
  docstrings says why it is long.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 120
LONG_HOT_PATHS: dict[str, str] = {}
"""`path::function` -> why it stays long (also said in its docstring)."""


def _import_graph():
    pytest.importorskip("networkx")
    spec = importlib.util.spec_from_file_location(
        "import_graph", REPO / "tools" / "import_graph.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module
    spec.loader.exec_module(module)
    return module


def test_no_import_cycles() -> None:
    graph = _import_graph()
    found = graph.imports()
    assert len(found) > 500, "the import graph lost most of its edges: the scan is broken"
    cycles = graph.cycles(found)
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_deferred_import() -> None:
    """A cycle closed only by an import inside a function is still a cycle."""
    graph = _import_graph()
    fake = [graph.Import("a", "b", 1, False), graph.Import("b", "a", 9, True)]
    assert graph.cycles(fake) == [["a", "b"]]


def _functions() -> list[tuple[str, int, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for root in ("hpuprof", "runtime/hpusim", "dashboards/hpudash"):
        for path in sorted((REPO / root).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    out.append((str(path.relative_to(REPO)), lines, node))
    return out


def test_no_function_over_120_lines() -> None:
    functions = _functions()
    assert len(functions) > 1000
    long = {
        f"{path}::{node.name}": lines
        for path, lines, node in functions
        if lines > MAX_FUNCTION_LINES and f"{path}::{node.name}" not in LONG_HOT_PATHS
    }
    assert long == {}, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_each_long_hot_path_says_why() -> None:
    by_name = {f"{path}::{node.name}": node for path, _, node in _functions()}
    for name in LONG_HOT_PATHS:
        assert name in by_name, f"{name} is listed as a hot path but does not exist"
        doc = ast.get_docstring(by_name[name]) or ""
        assert "hot path" in doc.lower(), f"{name}'s docstring does not say why it is long"
