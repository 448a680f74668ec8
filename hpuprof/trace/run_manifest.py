"""Which trace files of a run directory (`hpuprof record`) to load, from its `run.json`.

A run directory holds `run.json` (the manifest), `traces/` (Chrome JSON, one per rank; a
running or killed rank's stream is `*.incomplete.json`), `perfetto/`, `metrics/`, and after a
`kill -9` maybe leftovers: `.scratch-*` directories and `.*.tmp` files. The loader reads:

- the manifest's `traces`, then its `incomplete` streams whose rank has no final trace listed;
- where the manifest lists none (a run killed before it wrote one), or cannot be read, the
  trace files found in `traces/` (with a warning when the manifest is damaged);
- never `run.json` itself, nothing hidden (`.scratch-*`, `.*.tmp`), and nothing outside the
  run directory: a manifest entry that is absolute, climbs out with `..`, or is a link whose
  target lies outside is refused with a `TraceFormatError` naming `run.json` and the entry.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from hpuprof.errors import TraceFormatError

MANIFEST = "run.json"
TRACE_DIR = "traces"
INCOMPLETE_SUFFIX = ".incomplete.json"
LIST_KEYS = ("traces", "incomplete")


def is_run_directory(directory: Path) -> bool:
    """True when `directory` holds a `run.json` manifest."""
    return (directory / MANIFEST).is_file()


def run_trace_files(directory: Path) -> list[Path]:
    """The trace files of the run directory `directory`, in load order (see the module doc).

    Raises:
        TraceFormatError: a manifest entry names a file outside the run directory, or no trace
            file is found (naming `run.json` and what is wrong with it).
    """
    manifest = directory / MANIFEST
    entries, problem = _read_lists(manifest)
    files = [
        f for f in (_entry(directory, manifest, key, i, name) for key, i, name in entries) if f
    ]
    files = _without_superseded(files)
    if files:
        return files
    found = _found_in_traces_dir(directory)
    if problem is not None and found:
        warnings.warn(
            f"{manifest}: {problem}; loading the {len(found)} trace files found in "
            f"{directory / TRACE_DIR}",
            stacklevel=3,
        )
    if found:
        return found
    raise TraceFormatError(
        str(manifest),
        problem.split(":")[0] if problem else "key 'traces'",
        f"trace files of the run: {problem or 'it lists none'}, and {TRACE_DIR}/ holds none",
    )


def _read_lists(manifest: Path) -> tuple[list[tuple[str, int, Any]], str | None]:
    """The manifest's (key, index, entry) of every listed trace, and what is wrong with it."""
    import orjson

    try:
        top = orjson.loads(manifest.read_bytes())
    except OSError as error:
        return [], f"top level: unreadable ({error.strerror})"
    except orjson.JSONDecodeError as error:
        return [], f"byte {error.pos}: not valid JSON ({error.msg})"
    if not isinstance(top, dict):
        return [], f"top level: a JSON object (found {type(top).__name__})"
    entries: list[tuple[str, int, Any]] = []
    for key in LIST_KEYS:
        listed = top.get(key)
        if listed is None:
            continue
        if not isinstance(listed, list):
            return [], f"key {key!r}: a list of file names (found {type(listed).__name__})"
        entries += [(key, index, name) for index, name in enumerate(listed)]
    return entries, None


def _entry(directory: Path, manifest: Path, key: str, index: int, name: Any) -> Path | None:
    """The file a manifest entry names, checked to lie inside the run directory; None (with
    a warning) when it is missing or no file."""
    where = f"key {key!r}, entry {index}"
    if not isinstance(name, str) or not name or "\x00" in name:
        raise TraceFormatError(
            str(manifest), where, f"a file name inside the run directory (found {name!r:.80})"
        )
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts:
        raise TraceFormatError(
            str(manifest),
            where,
            f"a path inside the run directory, relative and without '..' (found {name!r:.200})",
        )
    path = directory / relative
    if not _inside(path, directory):
        raise TraceFormatError(
            str(manifest),
            where,
            f"a file inside the run directory ({name!r:.200} links to a file outside it)",
        )
    if relative.name == MANIFEST and len(relative.parts) == 1:
        raise TraceFormatError(str(manifest), where, "a trace file (found run.json itself)")
    if not path.is_file():
        warnings.warn(f"{manifest}: {where} names {name!r:.200}, which is missing", stacklevel=4)
        return None
    return path


def _inside(path: Path, directory: Path) -> bool:
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def _without_superseded(files: list[Path]) -> list[Path]:
    """Drop an incomplete stream whose final trace is also listed, and duplicates."""
    final = {f.name for f in files if not f.name.endswith(INCOMPLETE_SUFFIX)}
    kept: list[Path] = []
    for f in files:
        if (
            f.name.endswith(INCOMPLETE_SUFFIX)
            and f.name[: -len(INCOMPLETE_SUFFIX)] + ".json" in final
        ):
            continue
        if f not in kept:
            kept.append(f)
    return kept


def _found_in_traces_dir(directory: Path) -> list[Path]:
    """Chrome JSON traces in `traces/` (not hidden, inside the run directory), final traces
    before the incomplete stream of the same rank."""
    folder = directory / TRACE_DIR
    if not folder.is_dir() or not _inside(folder, directory):
        return []
    found = sorted(
        p
        for p in folder.iterdir()
        if p.name.endswith((".json", ".json.gz"))
        and not p.name.startswith(".")
        and p.is_file()
        and _inside(p, directory)
    )
    return _without_superseded(found)
