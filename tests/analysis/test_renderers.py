"""Every renderer of `hpuprof.render.FORMATS` is a `Renderer` (the protocol), writes the file
suffix that selects it, and is in the list mypy holds to the protocol."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hpuprof.render
from hpuprof.analysis.report import Report
from hpuprof.render import FORMATS, SUFFIXES, Renderer, get_renderer


def _checked_by_mypy() -> set[str]:
    """The class names in `_CHECKED`, the tuple mypy checks against the protocol."""
    tree = ast.parse(Path(hpuprof.render.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_CHECKED":
            assert isinstance(node.value, ast.Tuple)
            return {n.id for n in node.value.elts if isinstance(n, ast.Name)}
    raise AssertionError("hpuprof/render/__init__.py has no _CHECKED tuple")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_each_format_is_a_renderer(fmt: str) -> None:
    renderer = get_renderer(fmt)
    assert isinstance(renderer, Renderer)
    assert SUFFIXES[renderer.extension] == fmt
    assert type(renderer).__name__ == FORMATS[fmt][1] and FORMATS[fmt][1] in _checked_by_mypy()
    out = renderer.render(Report(source=("t.json",), sections={}))
    assert isinstance(out, (str, bytes))  # csv of a report without tables is empty


def test_an_object_without_render_is_no_renderer() -> None:
    class Half:
        extension = ".x"

    assert not isinstance(Half(), Renderer)
