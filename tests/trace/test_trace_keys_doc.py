"""docs/trace-keys.md lists exactly the args keys schema.py declares, with their columns."""

from __future__ import annotations

import re
from pathlib import Path

from hpuprof.trace.schema import ARGS, SOURCE_KEYS

DOC = Path(__file__).parents[2] / "docs" / "trace-keys.md"


def _table(heading: str) -> list[tuple[tuple[str, ...], str]]:
    """(keys, column) of each row of the table under `heading` (keys: the first cell's
    backquoted names, column: the second cell's)."""
    text = DOC.read_text()
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        rows.append((tuple(re.findall(r"`([^`]+)`", cells[0])), cells[1].strip("`")))
    return rows


def test_every_hpuprof_key_is_in_the_doc_and_only_those() -> None:
    documented = _table("Event args")
    assert sorted(documented) == sorted(((a.key,), a.column) for a in ARGS)


def test_every_source_key_is_in_the_doc_and_only_those() -> None:
    documented = _table("Other profilers' args keys hpuprof reads")
    assert sorted(documented) == sorted((k.keys, k.column) for k in SOURCE_KEYS)
