"""Answers of the dashboard's deterministic callbacks, kept by request and data version.

A page of an analysed run, a timeline window, a slice's details: the same request (Dash sends
the callback, its inputs and state as JSON) over the same files gets the same answer. So the
answer's bytes are kept, keyed by a hash of the request body and of the catalog's versions
(every entry's key, newest mtime and size: a changed or new trace invalidates everything), in
a byte-bounded LRU; a repeat is answered before Dash runs at all. Only callbacks listed in
`CACHEABLE` are kept: never the Runs page (its rows fill in as analyses finish) nor anything
that depends on time.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from hpudash.diskcache import MemoryCache
from hpudash.ids import Id

if TYPE_CHECKING:
    import flask

    from hpudash.data import DataStore

UPDATE_PATH = "/_dash-update-component"
CACHEABLE: tuple[str, ...] = (
    f"{Id.PAGE}.children",
    f"{Id.TIMELINE_GRAPH}.figure",
    f"{Id.TIMELINE_DETAILS}.children",
    f"{Id.TIMELINE_RANGE}.children",
    "compare-body.children",
)
"""Callback outputs whose answers depend only on the request and the served files."""
STATIC_GETS = frozenset({"/_dash-layout", "/_dash-dependencies"})
"""GET answers that never change while the app runs (its layout shell and callback list)."""
NOT_CACHEABLE_PATHS = frozenset({"/"})
"""Pages whose content changes without a request changing (the Runs page fills in)."""
DEFAULT_BYTES = 128 << 20


def _is_path(item: Any) -> bool:
    return (
        isinstance(item, dict) and item.get("id") == Id.URL and item.get("property") == "pathname"
    )


class ResponseCache:
    """Kept answers of deterministic callbacks (see module), bounded by `max_bytes`."""

    def __init__(self, store: DataStore, max_bytes: int = DEFAULT_BYTES) -> None:
        self.store = store
        self.memory = MemoryCache(max_bytes)
        self.hits = 0
        self.misses = 0
        self._stamp: tuple[int, str] = (0, "")

    def catalog_stamp(self) -> str:
        """A hash of every entry's version (recomputed when the catalog list changes)."""
        entries = self.store.entries()
        if self._stamp[0] != id(entries):
            text = "|".join(f"{e.key}:{e.mtime_ns}:{e.size}" for e in entries)
            self._stamp = (id(entries), hashlib.sha256(text.encode()).hexdigest())
        return self._stamp[1]

    def key(self, body: bytes) -> str | None:
        """The cache key of a callback request, or None when its answer must not be kept."""
        import orjson

        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        output = request.get("output") if isinstance(request, dict) else None
        if not isinstance(output, str) or not any(c in output for c in CACHEABLE):
            return None
        for item in request.get("inputs") or []:
            if _is_path(item) and item.get("value") in NOT_CACHEABLE_PATHS:
                return None
        digest = hashlib.sha256(body)
        digest.update(self.catalog_stamp().encode())
        return digest.hexdigest()

    def install(self, server: flask.Flask, pages: frozenset[str] = frozenset()) -> None:
        """Answer repeats from the cache and keep new answers (Flask request hooks).

        Args:
            pages: the app's page paths: their HTML (Dash's index, the same for every page
                and query) is kept like the static GETs.
        """
        import flask

        @server.before_request
        def answer_from_cache() -> flask.Response | None:
            request = flask.request
            if request.method == "GET" and (request.path in STATIC_GETS or request.path in pages):
                key: str | None = "GET index" if request.path in pages else "GET " + request.path
            elif request.method == "POST" and request.path == UPDATE_PATH:
                key = self.key(request.get_data(cache=True))
            else:
                return None
            flask.g.hpudash_cache_key = key
            if key is None:
                return None
            kept: Any = self.memory.get(key)
            if kept is None:
                self.misses += 1
                return None
            self.hits += 1
            flask.g.hpudash_cache_key = None
            body, mimetype = kept
            return flask.Response(body, status=200, mimetype=mimetype)

        @server.after_request
        def keep_answer(response: flask.Response) -> flask.Response:
            key = getattr(flask.g, "hpudash_cache_key", None)
            if key is not None and response.status_code == 200 and not response.direct_passthrough:
                body = response.get_data()
                if b"msg-error" not in body:  # an error may pass: ask again next time
                    self.memory.put(key, (body, response.mimetype), len(body) + 200)
            return response
