"""Safe file serving for the dashboard: downloads of traces and the HTML report.

Only files under the dashboard's directory are served, and only trace files or the report of
a known run; anything else (`..`, absolute paths, symlinks out of the root, other files) is a
404. Responses carry `X-Content-Type-Options: nosniff` and the HTML report a strict CSP.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hpudash.catalog import is_trace_name
from hpudash.data import DataStore, UnknownRunError

if TYPE_CHECKING:
    import flask

REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def safe_path(root: Path, rel: str) -> Path | None:
    """`root/rel` when it is a trace file inside `root` (after resolving links), else None."""
    if not rel or "\x00" in rel or rel.startswith(("/", "\\")) or "\\" in rel:
        return None
    root = root.resolve()
    try:
        path = (root / rel).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not path.is_relative_to(root) or not path.is_file() or not is_trace_name(path.name):
        return None
    return path


def register_routes(server: flask.Flask, store: DataStore) -> None:
    """Add `/files/<rel>` (a trace, as a download) and `/report.html?run=KEY` to `server`."""
    import flask

    @server.before_request
    def files_only_from_root() -> flask.Response | None:
        """Every path under /files/ is ours: `/files//etc/passwd` (a decoded `%2F`) would
        otherwise fall through to Dash's catch-all page route."""
        path = flask.request.path
        if path.startswith("/files/") and safe_path(store.root, path[len("/files/") :]) is None:
            flask.abort(404)
        return None

    @server.route("/files/<path:rel>")
    def download(rel: str) -> flask.Response:
        path = safe_path(store.root, rel)
        if path is None:
            flask.abort(404)
        response = flask.send_file(path, as_attachment=True, download_name=path.name)
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @server.route("/report.html")
    def report() -> flask.Response:
        from hpuprof.render import get_renderer

        key = flask.request.args.get("run", "")
        try:
            analysis = store.analysis(key)
        except UnknownRunError:
            flask.abort(404)
        if analysis.report is None:
            flask.abort(404)
        text = get_renderer("html").render(analysis.report)
        body = text.encode() if isinstance(text, str) else text
        response = flask.Response(body, mimetype="text/html")
        name = Path(key).name.split(".")[0] or "run"
        response.headers["Content-Disposition"] = f'attachment; filename="{name}-report.html"'
        response.headers["Content-Security-Policy"] = REPORT_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
