"""`hpuprof analyze PATH --workers N | --scheduler ADDRESS`: the rank-by-rank run of the CLI.

The work itself runs in `hpuprof.distributed.runner` (in this process or as Dask tasks); this
module finds the rank files, shows the progress and renders the merged report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hpuprof.errors import UsageError


def rank_files(path: Path) -> list[Path]:
    """The rank files of a run or rank directory (the file itself for a file)."""
    from hpuprof.trace.load import directory_trace_files

    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    if not path.is_dir():
        return [path]
    return directory_trace_files(path)


class _Bar:
    """A rich progress bar of ranks done, on stderr, shown only on a terminal."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        console = Console(stderr=True)
        self.progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self.task = self.progress.add_task("ranks analysed", total=total)

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, done: int, total: int, source: str) -> None:
        self.progress.update(self.task, completed=done, description=f"ranks ({Path(source).name})")


def analyze_by_rank(
    paths: list[Path],
    report: str,
    fmt: str,
    output: Path | None,
    selection: tuple[list[int], str, str],
    drop_last_step: bool,
    color: bool,
    workers: int,
    scheduler: str,
    worker_memory: str = "",
) -> int:
    """Analyse the rank files of each path apart, merge, render; 1 when a rank failed."""
    from hpuprof.analysis import AnalysisOptions, parse_reports
    from hpuprof.cli.commands._report_io import (
        _write_all,
        build_filters,
        pick_format,
        render_report,
    )
    from hpuprof.distributed.runner import analyze_files

    if workers < 0:
        raise UsageError("--workers must be 1 or more")
    names = parse_reports(report)
    form = pick_format(fmt, output)
    if output is not None and len(paths) > 1 and form != "text":
        raise UsageError("-o with several traces: analyse them one at a time")
    options = AnalysisOptions(drop_last_step=drop_last_step)
    filters = build_filters(*selection)
    chunks: list[str | bytes] = []
    failed: list[dict[str, Any]] = []
    for path in paths:
        files = rank_files(path)
        with _Bar(len(files)) as bar:
            rep, _ = analyze_files(
                files,
                names,
                options,
                filters,
                workers=max(workers, 1),
                scheduler=scheduler or None,
                worker_memory=worker_memory or None,
                progress=bar,
            )
        failed += rep.meta.get("failed", [])
        data = render_report(rep, form, output, color)
        if data is not None:
            chunks.append(data)
    if chunks:
        _write_all(output, chunks)
    for f in failed:
        where = f" at {f['position']}" if f.get("position") is not None else ""
        print(f"hpuprof: rank not analysed: {f['source']}{where}: {f['reason']}", file=sys.stderr)
    return 1 if failed else 0
