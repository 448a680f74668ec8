"""Atomic writes: the target is replaced whole or not at all, and no temporary file outlives a
write, even one a fatal signal interrupts (the profiler's signal path discards them)."""

from __future__ import annotations

from pathlib import Path

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
