"""Atomic writes: the target is replaced whole or not at all, and no temporary file outlives a
write, even one a fatal signal interrupts (the profiler's signal path discards them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpuprof.trace.atomic_write import atomic_output, discard_unfinished_writes


def _dot_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_write_replaces_the_target_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_bytes(b"old")
    with atomic_output(target) as handle:
        handle.write(b"new")
        assert _dot_files(tmp_path)  # the temporary beside it while writing
    assert target.read_bytes() == b"new" and _dot_files(tmp_path) == []


def test_a_failed_write_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write(b"half")
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old" and _dot_files(tmp_path) == []


def test_unfinished_writes_are_discarded_for_a_dying_process(tmp_path: Path) -> None:
    """What the profiler's fatal-signal path does before the process dies inside a write: the
    interrupted write (never resumed: its context is not exited) leaves no temporary, and
    the target keeps its previous content."""
    target = tmp_path / "run.json"
    target.write_bytes(b"old")
    interrupted = atomic_output(target)
    handle = interrupted.__enter__()
    handle.write(b"half")
    assert len(_dot_files(tmp_path)) == 1
    discard_unfinished_writes()
    handle.close()
    assert _dot_files(tmp_path) == [] and target.read_bytes() == b"old"
    with atomic_output(tmp_path / "other.json") as later:  # later writes still work
        later.write(b"x")
    assert (tmp_path / "other.json").read_bytes() == b"x" and _dot_files(tmp_path) == []


def test_a_temporary_file_is_registered_before_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fatal signal's handler deletes the writes under way (`discard_unfinished_writes`);
    a signal between the temporary file's creation and its registration left it behind (a
    kill trial found `.run.json.*.tmp`). The name is registered first: at the moment the file
    is created, a discard already deletes it."""
    import os

    import hpuprof.trace.atomic_write as aw

    real_open = os.open
    seen: list[bool] = []

    def open_and_discard(path: Any, flags: int, mode: int = 0o777) -> int:
        fd = real_open(path, flags, mode)
        seen.append(Path(path) in aw._IN_FLIGHT)
        aw.discard_unfinished_writes()  # as if the signal came right after the creation
        return fd

    monkeypatch.setattr(aw.os, "open", open_and_discard)
    target = tmp_path / "run.json"
    # its temporary file is gone: the rename fails
    with pytest.raises(aw.OutputError), aw.atomic_output(target) as handle:
        handle.write(b"{}")
    assert seen == [True]
    assert list(tmp_path.iterdir()) == []  # nothing left behind, no target written
