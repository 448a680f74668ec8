"""The pages as declared extension points: every module of `hpudash.pages` (but `common`) is a
registered page, and every component id the app draws is one of `hpudash.ids.Id`."""

from __future__ import annotations

import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dash")

import hpudash.pages
from hpudash.app import create_app, default_pages, render_page
from hpudash.data import DataStore
from hpudash.ids import Id

from tests.dashboard.conftest import write_run

IDS = {i.value for i in Id}


def _ids(component: Any) -> Iterator[str]:
    """Every `id` in a Dash component tree."""
    if isinstance(component, (list, tuple)):
        for c in component:
            yield from _ids(c)
        return
    if not hasattr(component, "to_plotly_json"):
        return
    got = getattr(component, "id", None)
    if got is not None:
        yield str(got)
    yield from _ids(getattr(component, "children", None))


def _declared(component_id: str) -> bool:
    """An `Id`, or `Id.item(key)` of one (`<id>-<key>`)."""
    return component_id in IDS or any(
        re.fullmatch(re.escape(i) + r"-.+", component_id) for i in IDS
    )


def test_every_page_module_is_registered() -> None:
    modules = {m.name for m in pkgutil.iter_modules(hpudash.pages.__path__)} - {"common"}
    assert {p.__name__.rsplit(".", 1)[-1] for p in default_pages()} == modules


def test_every_component_id_is_declared(tmp_path: Path) -> None:
    write_run(tmp_path / "a", 1_500, ranks=2)
    write_run(tmp_path / "b", 1_500)
    store = DataStore(tmp_path)
    app = create_app(tmp_path, store=store, response_cache_bytes=0)
    drawn = list(_ids(app.layout))
    for page in default_pages():
        body = render_page(store, page.PATH, "?run=a")
        assert "could not be built" not in repr(body) and "msg-error" not in repr(body), page
        drawn += _ids(body)
    from hpudash.app import _nav

    drawn += _ids(_nav(default_pages(), "/", "a"))
    assert {"ranks-split", "prec-table-0", "nav-memory", "memory-top-ops"} <= set(drawn)
    undeclared = sorted({i for i in drawn if not _declared(i)})
    assert undeclared == []


def test_compare_page_counts_steps_per_rank(tmp_path: Path) -> None:
    """A 2-rank run against a 1-rank run: "N steps x 2 ranks", never the sum of both ranks."""
    write_run(tmp_path / "a", 1_500, ranks=2)
    write_run(tmp_path / "b", 1_500)
    text = repr(render_page(DataStore(tmp_path), "/compare", "?run=a&b=b"))
    steps = re.search(r"over (\d+) steps x 2 ranks of A, (\d+) steps of B", text)
    assert steps is not None, text[:2000]
    from hpuprof import load
    from hpuprof.analysis._common import step_windows

    windows = step_windows(load(tmp_path / "a").events)
    assert len(windows) == 2 * int(steps.group(1))  # each rank's steps once


def test_ops_page_of_two_ranks_has_a_rank_column(tmp_path: Path) -> None:
    """The host ops table adds both ranks (its heading says so); "Ops per rank" splits them
    with a rank column whose rows add up to the summed table's."""
    write_run(tmp_path / "a", 1_500, ranks=2)
    write_run(tmp_path / "one", 1_500)
    store = DataStore(tmp_path)
    body = render_page(store, "/ops", "?run=a")
    text = repr(body)
    assert "added over 2 ranks" in text and "Ops per rank" in text
    [grid] = [c for c in _components(body) if getattr(c, "id", None) == Id.OPS_BY_RANK]
    rows = grid.rowData
    assert {r["rank"] for r in rows} == {0, 1}
    [summed] = [c for c in _components(body) if getattr(c, "id", None) == Id.OPS_GRID]
    calls: dict[str, int] = {}
    for r in rows:
        calls[r["name"]] = calls.get(r["name"], 0) + r["calls"]
    assert {r["name"]: r["calls"] for r in summed.rowData} == calls
    single = repr(render_page(store, "/ops", "?run=one"))
    assert "added over" not in single


def _components(component: Any) -> Iterator[Any]:
    if isinstance(component, (list, tuple)):
        for c in component:
            yield from _components(c)
        return
    if hasattr(component, "to_plotly_json"):
        yield component
        yield from _components(getattr(component, "children", None))
