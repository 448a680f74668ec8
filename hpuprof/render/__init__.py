"""Renderers: one class per format, each with `extension` and `render(report) -> str | bytes`."""

from __future__ import annotations

from typing import Any

from hpuprof.errors import UsageError

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


def get_renderer(fmt: str, **kwargs: Any) -> Any:
    """The renderer instance for a format name (text, json, md, html, csv)."""
    import importlib

    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    module, cls = FORMATS[fmt]
    return getattr(importlib.import_module(module), cls)(**kwargs)
