"""`hpuprof convert IN OUT`: convert a trace between formats, chosen by file extension.

Formats (`hpuprof.trace.formats`): `.json`, `.json.gz`, `.gz` (Kineto/Chrome trace),
`.perfetto-trace` / `.pftrace` (Perfetto protobuf, opens natively in ui.perfetto.dev),
`.parquet` (our columnar file). IN may also be a directory of rank traces. OUT may be a directory (an existing one, or a
path ending in `/`): one Chrome-trace `rank-<R>.json.gz` per rank, the only way to write a
multi-rank trace as Chrome JSON.

`hpuprof convert RUN_DIR` (no OUT) writes the Perfetto trace of every finished rank of a run
directory into its `perfetto/` folder and lists them in its `run.json`
(`hpuprof.capture.perfetto_export`): what `hpuprof record` does after the script, on demand.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hpuprof.cli.command import command
from hpuprof.errors import UsageError
from hpuprof.path_text import path_text

if TYPE_CHECKING:
    from hpuprof.trace.formats import TraceFormat
    from hpuprof.trace.model import Trace


def _is_directory_target(text: str) -> bool:
    return text.endswith((os.sep, "/")) or Path(text).is_dir()


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(label), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"))
    with Progress(
        *columns, TimeElapsedColumn(), console=Console(stderr=True), transient=True
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _write(trace: Trace, target: str, written_as: TraceFormat | None) -> list[Path]:
    if written_as is None:  # a directory: Chrome JSON per rank
        from hpuprof.trace.json_write import write_chrome_json

        with _progress("writing JSON") as update:
            return write_chrome_json(trace, target, progress=update)
    with _progress(f"writing {written_as.name}") as update:
        return written_as.write(trace, Path(target), update)


def run_perfetto_of_run(source: Path) -> int:
    """`hpuprof convert RUN_DIR`: the Perfetto trace of each finished rank; 1 if one failed."""
    from hpuprof.capture.perfetto_export import export_run

    if not source.is_dir():
        raise UsageError(f"{source}: give an output file (or dir/) to convert a trace file")
    done = export_run(source)
    for item in done:
        if item.perfetto is None:
            print(f"hpuprof: {item.trace}: {item.warning}", file=sys.stderr)
        else:
            print(f"wrote {source / item.perfetto}")
    if not done:
        print(f"{source}: no finished rank to convert", file=sys.stderr)
    return 1 if not done or any(item.perfetto is None for item in done) else 0


def run_convert(source: Path, target: str) -> int:
    """Load `source`, write it to `target` in the format its extension names.

    Raises:
        UsageError: unknown extension, or a missing input.
    """
    import hpuprof
    from hpuprof.trace.formats import FORMATS, TRACE_SUFFIXES, named_format

    if not source.exists():
        raise UsageError(f"{source}: no such file or directory")
    if source.is_file() and named_format(source) is None:
        raise UsageError(
            f"{source}: unknown input extension; expected one of {', '.join(TRACE_SUFFIXES)}"
        )
    directory = _is_directory_target(target)
    written_as = None if directory else named_format(target)
    if not directory and (written_as is None or not written_as.writer):
        writable = [s for f in FORMATS if f.writer for s in f.suffixes]
        raise UsageError(
            f"{target}: unknown output extension; expected one of {', '.join(writable)}"
            " or a directory (ending in /) for one JSON file per rank"
        )
    started = time.perf_counter()
    if sys.stderr.isatty():
        from rich.console import Console

        with Console(stderr=True).status(f"loading {source}"):
            trace: Any = hpuprof.load(source)
    else:
        trace = hpuprof.load(source)
    written = _write(trace, target, written_as)
    seconds = time.perf_counter() - started
    names = ", ".join(path_text(p) for p in written)  # a stdout that takes only UTF-8
    print(f"wrote {names}: {len(trace.events):,} events in {seconds:.1f} s")
    return 0


@command(
    "convert",
    help="Convert a trace: .json, .json.gz, .gz, .perfetto-trace/.pftrace, .parquet (by "
    "extension); OUT may be a directory for one Chrome-trace file per rank. Without OUT, "
    "a run directory gets the Perfetto trace of each finished rank.",
)
@click.argument(
    "source",
    type=click.Path(path_type=Path),
    help="Input trace file or directory of rank traces.",
)
@click.argument(
    "target",
    required=False,
    help="Output file (format by extension) or dir/; none: a run's Perfetto traces.",
)
def convert(source: Path, target: str | None) -> int:
    if target is None:
        return run_perfetto_of_run(source)
    return run_convert(source, target)
