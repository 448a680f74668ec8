"""Renderers: one class per format, each a `Renderer` (`extension`, `render(report)`).

How to add a format: write `hpuprof/render/<format>.py` with a class that has an `extension`
and `render(report) -> str | bytes` (the `Renderer` protocol; add it to `_CHECKED` below so
mypy holds it to the protocol), and one line in `FORMATS` (and `SUFFIXES` for its file
suffixes). The CLI's `--format`, the output file's suffix and the dashboard's HTML download all
pick renderers from these tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, overload, runtime_checkable

from hpuprof.errors import UsageError

if TYPE_CHECKING:
    from hpuprof.analysis.report import Report
    from hpuprof.render.csv_render import CsvRenderer
    from hpuprof.render.html import HtmlRenderer
    from hpuprof.render.json_render import JsonRenderer
    from hpuprof.render.markdown import MarkdownRenderer
    from hpuprof.render.terminal import TerminalRenderer


@runtime_checkable
class Renderer(Protocol):
    """What every renderer is: the file extension it writes, and one method from a `Report`
    (`hpuprof.analysis.Report`) to the document, text or bytes."""

    extension: str

    def render(self, report: Report) -> str | bytes: ...


FORMATS: dict[str, tuple[str, str]] = {
    "text": ("hpuprof.render.terminal", "TerminalRenderer"),
    "json": ("hpuprof.render.json_render", "JsonRenderer"),
    "md": ("hpuprof.render.markdown", "MarkdownRenderer"),
    "html": ("hpuprof.render.html", "HtmlRenderer"),
    "csv": ("hpuprof.render.csv_render", "CsvRenderer"),
}
SUFFIXES: dict[str, str] = {
    ".txt": "text",
    ".json": "json",
    ".md": "md",
    ".html": "html",
    ".htm": "html",
    ".csv": "csv",
}

if TYPE_CHECKING:
    # mypy holds every renderer of FORMATS to the protocol (never run)
    _CHECKED: tuple[type[Renderer], ...] = (
        TerminalRenderer,
        JsonRenderer,
        MarkdownRenderer,
        HtmlRenderer,
        CsvRenderer,
    )


@overload
def get_renderer(fmt: Literal["csv"], **kwargs: Any) -> CsvRenderer: ...
@overload
def get_renderer(fmt: str, **kwargs: Any) -> Renderer: ...
def get_renderer(fmt: str, **kwargs: Any) -> Renderer:
    """The renderer instance for a format name (text, json, md, html, csv)."""
    import importlib

    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    module, cls = FORMATS[fmt]
    renderer: Renderer = getattr(importlib.import_module(module), cls)(**kwargs)
    return renderer
