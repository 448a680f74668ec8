"""The `Page` protocol: what the app needs of a page (every module of `hpudash.pages` but
`common` is one).

How to add a page: write `hpudash/pages/<name>.py` with `PATH`, `TITLE`, `NEEDS_RUN`,
`layout(ctx)` and `register(app, store)`, give its components ids in `hpudash.ids.Id`, and
add the module to `hpudash.app.default_pages()` (mypy checks it against this protocol there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import dash

    from hpudash.data import DataStore
    from hpudash.pages.common import Context


class Page(Protocol):
    """One page of the dashboard (a module satisfies it with module-level names).

    Args:
        PATH: its URL path ("/" for the start page).
        TITLE: its name in the menu.
        NEEDS_RUN: it shows one run (the app picks the first when the URL names none).
        __name__: its module's name; the last part names its menu link (`Id.NAV` + name).
    """

    PATH: str
    TITLE: str
    NEEDS_RUN: bool
    __name__: str

    def layout(self, ctx: Context) -> Any:
        """The page's components for one run and query (built on each visit; may raise
        `HpuprofError`, shown as a message)."""
        ...

    def register(self, app: dash.Dash, store: DataStore) -> None:
        """Add the page's callbacks to `app` (called once, by `create_app`)."""
        ...
