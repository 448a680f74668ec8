"""Safe file serving for the dashboard: downloads of traces and the HTML report.

`/files/<rel>` serves a file only when a catalog entry lists it (a run's traces and Perfetto
exports, a lone trace): nothing else under the root (caches, manifests, hidden files), nothing
reached through a symbolic link, nothing outside the root, whatever the encoding of the path.
Everything else is a 404. Responses carry `X-Content-Type-Options: nosniff`, attachments a
`Content-Disposition` built by werkzeug (quoted, RFC 5987 for non-ASCII names), the HTML
report a strict CSP. Any failure is a short message, never a traceback.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from hpudash.catalog import Entry
from hpudash.data import DataStore, UnknownRunError
from hpuprof.path_text import path_text

if TYPE_CHECKING:
    import flask

REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
log = logging.getLogger("hpudash")


def safe_path(root: Path, rel: str) -> Path | None:
    """`root/rel` when it names a regular file inside `root` through no symbolic link."""
    if not rel or not isinstance(rel, str) or "\x00" in rel or "\\" in rel:
        return None
    if rel.startswith("/") or any(part in ("", ".", "..") for part in rel.split("/")):
        return None
    root = root.resolve()
    path = root / rel
    cur = root
    for part in path.relative_to(root).parts:
        cur = cur / part
        if cur.is_symlink():
            return None
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not resolved.is_relative_to(root) or not resolved.is_file():
        return None
    return resolved


def served_file(store: DataStore, rel: str) -> Path | None:
    """The file `rel` names when a catalog entry lists it, else None. A listed file whose name
    is not valid UTF-8 is named by its `path_text` (what `file_href` links to)."""
    path = safe_path(store.root, rel)
    for entry in store.entries():
        for listed in entry.files():
            if listed == path or (path is None and _rel_text(store, listed) == rel):
                return listed
    return None


def _rel_text(store: DataStore, path: Path) -> str:
    return path_text(path.relative_to(store.root).as_posix())


def file_href(store: DataStore, path: Path) -> str:
    """The URL of one of an entry's files (`/files/<rel>`, quoted)."""
    return "/files/" + quote(_rel_text(store, path))


def content_disposition(name: str) -> str:
    """`attachment` with a plain ASCII `filename` (no quote, separator or control character
    can reach the header) and the exact name as RFC 5987 `filename*`."""
    plain = (SAFE_NAME.sub("_", name).strip("._") or "download")[:120]
    exact = quote(name, safe="")
    return f'attachment; filename="{plain}"' + (
        f"; filename*=UTF-8''{exact}" if exact != plain else ""
    )


def download_name(entry: Entry) -> str:
    """A plain file name for the report of `entry` (no quotes or separators reach a header)."""
    stem = Path(entry.key).name.split(".")[0] if entry.key != "." else entry.path.name
    return (SAFE_NAME.sub("_", stem).strip("._") or "run")[:80] + "-report.html"


def register_routes(server: flask.Flask, store: DataStore) -> None:
    """Add `/files/<rel>` (a trace, as a download) and `/report.html?run=KEY` to `server`."""
    import flask

    @server.before_request
    def files_only_from_catalog() -> flask.Response | None:
        """Every path under /files/ is ours: `/files//etc/passwd` (a decoded `%2F`) would
        otherwise fall through to Dash's catch-all page route."""
        path = flask.request.path
        if path.startswith("/files/") and served_file(store, path[len("/files/") :]) is None:
            return _not_found()
        return None

    @server.route("/files/<path:rel>")
    def download(rel: str) -> flask.Response:
        path = served_file(store, rel)
        if path is None:
            return _not_found()
        # the shown name and our own etag: werkzeug's encode `path.name` and `str(path)`,
        # which raises for a name that is not UTF-8
        name, stat = path_text(path.name), path.stat()
        etag = f"{stat.st_mtime_ns:x}-{stat.st_size:x}"
        response = flask.send_file(
            path, mimetype="application/octet-stream", download_name=name, etag=etag
        )
        response.headers["Content-Disposition"] = content_disposition(name)
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @server.route("/report.html")
    def report() -> flask.Response:
        from hpuprof.render import get_renderer

        key = flask.request.args.get("run", "")
        try:
            entry = store.entry(key)
            analysis = store.analysis(entry)
        except UnknownRunError:
            return _not_found()
        except Exception as error:
            log.exception("report of %r", key)
            return _plain(500, f"The report could not be built: {type(error).__name__}.")
        if analysis.report is None:
            return _not_found()
        text = get_renderer("html").render(analysis.report)
        body = text.encode() if isinstance(text, str) else text
        response = flask.Response(body, mimetype="text/html")
        response.headers["Content-Disposition"] = content_disposition(download_name(entry))
        response.headers["Content-Security-Policy"] = REPORT_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @server.errorhandler(500)
    def internal(_error: Exception) -> flask.Response:
        return _plain(500, "Internal error: the server log has the details.")


def _plain(status: int, text: str) -> flask.Response:
    import flask

    response = flask.Response(text + "\n", status=status, mimetype="text/plain")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _not_found() -> flask.Response:
    return _plain(404, "Not found: no such run or trace file in this dashboard.")
