"""`create_app(run_dir)`: the Dash app over a directory of runs, pages registered explicitly.

The factory builds the layout shell (header, URL, page container), registers each page's
callbacks (its `pages`, `Page`s, by default `default_pages()`) and the file routes, and loads
nothing: data is read by the store on first request.
Routing is one thin callback from the URL to a page's `layout(ctx)`; a change of the URL that
only moves a view (the timeline's zoom, kept in the URL) does not rebuild the page.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from hpudash import server
from hpudash.data import Analyzer, DataStore, Loader
from hpudash.ids import Id
from hpudash.page import Page
from hpudash.pages import (
    common,
    compare,
    dynamicity,
    memory,
    nodes,
    ops,
    overview,
    precision,
    ranks,
    runs,
)
from hpudash.pages import timeline as timeline_page
from hpudash.respcache import DEFAULT_BYTES, ResponseCache
from hpuprof.errors import HpuprofError, UsageError

VIEW_PARAMS = frozenset({"t0", "t1"})
"""Query keys that move a view inside a page: changing them never rebuilds the page."""
log = logging.getLogger("hpudash")


def default_pages() -> tuple[Page, ...]:
    """The dashboard's pages, in menu order (mypy checks each against `Page`)."""
    return (
        runs, overview, timeline_page, ops, nodes, dynamicity, precision, ranks, memory, compare,
    )  # fmt: skip


def _nav(pages: Sequence[Page], path: str, run: str) -> list[Any]:
    links: list[Any] = [html.Span("hpudash", className="brand")]
    for page in pages:
        target = common.href(page.PATH, run=run) if page.PATH != "/" else "/"
        cls = "active" if path == page.PATH else ""
        name = page.__name__.rsplit(".", 1)[-1]
        links.append(dcc.Link(page.TITLE, href=target, className=cls, id=Id.NAV.item(name)))
    return links


def page_identity(path: str, search: str) -> str:
    """What decides a page's content: its path and query without the view parameters."""
    query = {k: v for k, v in common.parse_query(search).items() if k not in VIEW_PARAMS}
    return common.href(path, **dict(sorted(query.items())))


def render_page(
    store: DataStore, path: str, search: str, pages: Sequence[Page] | None = None
) -> Any:
    """The layout of page `path` (one of `pages`, default `default_pages()`) for the query
    `search` (errors become a message)."""
    query = common.parse_query(search)
    page = next((p for p in pages or default_pages() if path == p.PATH), None)
    if page is None:
        return common.message("There is no page at this address.", "error")
    run = query.get("run", "")
    if page.NEEDS_RUN and not run:
        entries = store.entries()
        if not entries:
            return common.message(f"No runs or traces under {store.root} yet.")
        run = entries[0].key
    ctx = common.Context(store=store, run=run, query=query)
    try:
        body = page.layout(ctx)
    except HpuprofError as error:
        return common.message(str(error), "error")
    except Exception as error:
        log.exception("page %s for run %r", path, run)
        return common.message(f"This page could not be built ({type(error).__name__}); the server log has the details.", "error")  # fmt: skip
    if not page.NEEDS_RUN:
        return body
    picker = html.Div([html.Span("Run"), common.run_picker(ctx, Id.RUN_SELECT, run)], className="runbar")  # fmt: skip
    return [picker, body]


def create_app(
    run_dir: str | Path,
    *,
    loader: Loader | None = None,
    analyzer: Analyzer | None = None,
    store: DataStore | None = None,
    response_cache_bytes: int = DEFAULT_BYTES,
    pages: Sequence[Page] | None = None,
) -> dash.Dash:
    """The dashboard over `run_dir` (runs and traces found recursively, rescanned per request).

    Args:
        run_dir: the directory to serve; nothing outside it is ever read or served.
        loader: path -> Trace (default `hpuprof.load`, with its cache).
        analyzer: Trace -> `data.Analysis` (default: `hpuprof.analysis.analyze`).
        store: a ready `DataStore` (cache budgets, disk cache) instead of the default one.
        response_cache_bytes: budget of the kept answers of deterministic callbacks
            (`hpudash.respcache`); 0 turns it off.
        pages: the pages served, in menu order (default `default_pages()`).
    """
    pages = tuple(pages) if pages is not None else default_pages()
    root = Path(run_dir)
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    if store is None:
        store = DataStore(root, loader=loader, analyzer=analyzer)
    app = dash.Dash(
        "hpudash",
        title="hpudash",
        assets_folder=str(Path(__file__).parent / "assets"),
        suppress_callback_exceptions=True,
        update_title="",
    )
    app.layout = html.Div(
        [
            dcc.Location(id=Id.URL, refresh="callback-nav"),
            dcc.Store(id=Id.PAGE_KEY),
            html.Div(id=Id.NAV, className="header"),
            html.Div(id=Id.PAGE, className="page"),
        ]
    )

    @app.callback(
        Output(Id.PAGE, "children"),
        Output(Id.NAV, "children"),
        Output(Id.PAGE_KEY, "data"),
        Input(Id.URL, "pathname"),
        Input(Id.URL, "search"),
        State(Id.PAGE_KEY, "data"),
    )
    def route(path: str | None, search: str | None, shown: str | None) -> tuple[Any, Any, Any]:
        identity = page_identity(path or "/", search or "")
        if identity == shown:
            return dash.no_update, dash.no_update, dash.no_update
        run = common.parse_query(search).get("run", "")
        page = render_page(store, path or "/", search or "", pages)
        return page, _nav(pages, path or "/", run), identity

    @app.callback(
        Output(Id.URL, "search"),
        Input(Id.RUN_SELECT, "value"),
        State(Id.URL, "search"),
        prevent_initial_call=True,
    )
    def select_run(run: str | None, search: str | None) -> str:
        query = common.parse_query(search)
        if not run or query.get("run") == run:
            raise dash.exceptions.PreventUpdate
        kept = {k: v for k, v in query.items() if k not in VIEW_PARAMS}
        return "?" + common.href("", **(kept | {"run": run})).lstrip("?")

    for page in pages:
        page.register(app, store)
    server.register_routes(app.server, store)
    if response_cache_bytes > 0:
        ResponseCache(store, response_cache_bytes).install(
            app.server, frozenset(p.PATH for p in pages)
        )
    app.server.config["hpudash.store"] = store
    return app
