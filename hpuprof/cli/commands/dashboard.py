"""`hpuprof dashboard [DIR] [--host 127.0.0.1] [--port 8050]`: serve the web dashboard.

Served by waitress (a production WSGI server: a pool of worker threads, no debug reloader);
`--debug` runs Dash's development server instead. Caches live under the user's cache
directory, bounded by `--memory-mb` and `--disk-mb`; nothing is written into DIR.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hpuprof.cli.command import command, option

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@command(
    "dashboard",
    help="Serve the web dashboard over DIR: runs, timelines, reports, comparisons "
    "(runs found recursively; new runs appear without a restart).",
)
@click.argument(
    "directory",
    type=click.Path(path_type=Path),
    default=Path("."),
    help="Directory of runs and traces.",
)
@option("--host", default="127.0.0.1", help="Address to bind (local only by default).")
@option("--port", default=8050, help="TCP port.")
@option("--threads", default=8, type=click.IntRange(min=1), help="Worker threads of the server.")
@option(
    "--memory-mb",
    default=1024,
    type=click.IntRange(min=16),
    help="Memory kept for analysed runs (MB).",
)
@option(
    "--disk-mb",
    default=4096,
    type=click.IntRange(min=16),
    help="Disk kept for analysed runs in the user cache (MB).",
)
@option(
    "--debug",
    is_flag=True,
    default=False,
    help="Dash's development server in debug mode (never on a shared host).",
)
def dashboard(
    directory: Path, host: str, port: int, threads: int, memory_mb: int, disk_mb: int, debug: bool
) -> int:
    from hpuprof.errors import UsageError

    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory")
    try:
        import waitress
        from hpudash.app import create_app
        from hpudash.data import DataStore
    except ImportError as error:
        raise UsageError(
            f"the dashboard needs the 'dashboard' extra (pip install 'hpuprof[dashboard]'): {error}"
        ) from None
    if host not in LOCAL_HOSTS:
        print(
            f"hpuprof: warning: serving on {host}: anyone who can reach this address can "
            f"read every trace under {directory.resolve()}",
            file=sys.stderr,
        )
    store = DataStore(directory, memory_bytes=memory_mb << 20, disk_bytes=disk_mb << 20)
    app = create_app(directory, store=store)
    print(
        f"hpudash serving {directory.resolve()} at http://{host}:{port}/ (Ctrl-C to stop)",
        flush=True,
    )
    if debug:
        app.run(host=host, port=port, debug=True)
    else:
        import logging

        # "Task queue depth is N" on every busy moment says only that requests queue
        # (this is hpuprof's own process: its logging is ours to set)
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)
        waitress.serve(app.server, host=host, port=port, threads=threads, ident="hpudash")
    return 0
