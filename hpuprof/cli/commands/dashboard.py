"""`hpuprof dashboard [DIR] [--host 127.0.0.1] [--port 8050]`: serve the web dashboard."""

from __future__ import annotations

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
        debug: bool = typer.Option(
            False, "--debug", help="Dash debug mode (never on a shared host)."
        ),
    ) -> int:
        from hpuprof.errors import UsageError

        if not directory.is_dir():
            raise UsageError(f"{directory}: not a directory")
        try:
            from hpudash.app import create_app
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
        app = create_app(directory)
        print(f"hpudash serving {directory.resolve()} at http://{host}:{port}/ (Ctrl-C to stop)")
        app.run(host=host, port=port, debug=debug)
        return 0
