"""`hpuprof dashboard [DIR] [--host 127.0.0.1] [--port 8050]`: serve the web dashboard.

Served by waitress (a production WSGI server: a pool of worker threads, no debug reloader);
`--debug` runs Dash's development server instead. Caches live under the user's cache
directory, bounded by `--memory-mb` and `--disk-mb`; nothing is written into DIR.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def register(app: typer.Typer) -> None:
    @app.command(
        "dashboard",
        help="Serve the web dashboard over DIR: runs, timelines, reports, comparisons "
        "(runs found recursively; new runs appear without a restart).",
    )
    def dashboard(
        directory: Path = typer.Argument(Path("."), help="Directory of runs and traces."),
        host: str = typer.Option(
            "127.0.0.1", "--host", help="Address to bind (local only by default)."
        ),
        port: int = typer.Option(8050, "--port", help="TCP port."),
        threads: int = typer.Option(8, "--threads", min=1, help="Worker threads of the server."),
        memory_mb: int = typer.Option(
            1024, "--memory-mb", min=16, help="Memory kept for analysed runs (MB)."
        ),
        disk_mb: int = typer.Option(
            4096, "--disk-mb", min=16, help="Disk kept for analysed runs in the user cache (MB)."
        ),
        debug: bool = typer.Option(
            False,
            "--debug",
            help="Dash's development server in debug mode (never on a shared host).",
        ),
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
            # "Task queue depth is N" on every busy moment says only that requests queue
            # (this is hpuprof's own process: its logging is ours to set)
            logging.getLogger("waitress.queue").setLevel(logging.ERROR)
            waitress.serve(app.server, host=host, port=port, threads=threads, ident="hpudash")
        return 0
