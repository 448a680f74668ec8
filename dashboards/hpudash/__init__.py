"""hpudash: the Dash web app over a directory of hpuprof runs and traces.

Importing this package is cheap: it loads no data and starts nothing. `create_app(run_dir)`
builds the app; `hpuprof dashboard DIR` serves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dash

__all__ = ["create_app"]


def create_app(run_dir: Any, **options: Any) -> dash.Dash:
    """Build the dashboard over `run_dir` (see `hpudash.app.create_app`)."""
    from hpudash.app import create_app as _create_app

    return _create_app(run_dir, **options)
