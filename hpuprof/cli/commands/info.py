"""`hpuprof info PATH [--json]`: what a trace holds (events, span, ranks, devices, steps...)."""

from __future__ import annotations

from typing import Any

import click

from hpuprof.cli.command import command, option


def _render_text(summary: Any) -> str:
    lines = [
        f"source:      {', '.join(summary.sources)}",
        f"format:      {summary.format}",
        f"events:      {summary.events:,} (counters {summary.counters:,}, flows {summary.flows:,})",
        f"time span:   {summary.span_ns / 1e6:,.3f} ms ({summary.start_ns} .. {summary.end_ns} ns)",
        f"ranks:       {', '.join(map(str, summary.ranks)) or '-'}",
    ]
    devices = [f"{d} ({name})" if name else d for d, name in summary.devices.items()]
    lines.append(f"devices:     {', '.join(devices) or 'none'}")
    if summary.device_time:
        lines.append(f"device time: {summary.device_time}")
    steps = summary.steps
    step_text = f"{len(steps)} ({steps[0]}..{steps[-1]})" if steps else "none"
    lines.append(f"steps:       {step_text}")
    lines.append("kinds:       " + ", ".join(f"{k} {v:,}" for k, v in summary.kinds.items()))
    lines.append("categories:")
    lines.extend(
        f"  {cat or '(none)':<28} {count:>10,}" for cat, count in summary.categories.items()
    )
    return "\n".join(lines)


def _summary(source: Any, cache: bool) -> Any:
    """The summary of a trace file (its cached summary when there: no load, no pandas), or of a
    directory's rank files summarized one by one (a bar on stderr counts their bytes when it
    takes more than a second)."""
    from hpuprof.trace.progress import delayed_progress

    if not source.is_dir():
        from hpuprof.trace.summary_cache import file_summary

        return file_summary(source, lambda: _load_and_summarize(source, cache), cache)
    from hpuprof.trace.directory_summary import summarize_files
    from hpuprof.trace.trace_file import directory_trace_files, load_file

    files = directory_trace_files(source)
    total = sum(f.stat().st_size for f in files)
    with delayed_progress(total, f"loading {len(files):,} files of {source.name}") as progress:
        return summarize_files(
            files, lambda f: load_file(f, cache=cache, store=len(files) == 1), progress, cache=cache
        )


def _load_and_summarize(source: Any, cache: bool) -> Any:
    from hpuprof.trace.load import load
    from hpuprof.trace.progress import delayed_progress
    from hpuprof.trace.summary import summarize

    total = source.stat().st_size if source.is_file() else None
    with delayed_progress(total, f"loading {source.name}") as progress:
        return summarize(load(source, cache=cache, progress=progress))


@command("info")
@click.argument("path", help="trace file or directory of rank traces")
@option("--json", "as_json", is_flag=True, default=False, help="print JSON instead of text")
@option("--cache/--no-cache", default=True, help="use the load and summary caches")
def info(path: str, as_json: bool, cache: bool) -> None:
    """Events, time span, ranks, devices, categories, kinds, steps and format of a trace."""
    import json
    from pathlib import Path

    source = Path(path)
    summary = _summary(source, cache)
    end = None
    if source.is_dir():  # a run directory may say how the run ended
        from hpuprof.capture.run_dir import read_run_end  # not for a file: start-up time

        end = read_run_end(source)
    if as_json:
        data = summary.to_dict()
        if end is not None:
            data["run_end"] = {**end.to_json(), "detail": end.detail}
        click.echo(json.dumps(data, indent=2))
    else:
        text = _render_text(summary)
        click.echo(text if end is None else f"run ended:   {end.summary}\n{text}")
