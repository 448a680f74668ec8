"""The default merge of per-rank report sections: the ranks' rows stacked, each with its rank."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from typing import Any

from hpuprof.analysis.findings import Finding
from hpuprof.analysis.report import ACROSS_RANKS


@functools.cache
def _ranked(cls: type) -> type:
    """The row dataclass `cls` with a `rank` field added: a stacked row stays a `cls` (the
    registry's table functions read its attributes) and says its rank."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    return dataclasses.make_dataclass(
        cls.__name__,
        [("rank", int, dataclasses.field(default=-1))],
        bases=(cls,),
        frozen=params.frozen,
        namespace={"__module__": cls.__module__},
    )


def _with_rank(rank: int, row: Any) -> Any:
    if hasattr(row, "rank") or (isinstance(row, Mapping) and "rank" in row):
        return row
    if dataclasses.is_dataclass(row) and not isinstance(row, type):
        values = {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.init}
        return _ranked(type(row))(**values, rank=rank)
    if isinstance(row, Mapping):
        return {"rank": rank, **row}
    return row


def _rows(rank: int, rows: tuple[Any, ...]) -> list[Any]:
    return [_with_rank(rank, row) for row in rows]


def _finding(rank: int, finding: Finding) -> Finding:
    if "rank" in finding.evidence:
        return finding
    return dataclasses.replace(
        finding,
        title=f"rank {rank}: {finding.title}",
        evidence={"rank": rank, **finding.evidence},
    )


def stack_ranks(parts: Mapping[int, Any], failed: Iterable[Any] = ()) -> Any:
    """One section from the same report of several ranks (`{rank: section}`).

    Tuple fields (tables) are concatenated in rank order, rows without a `rank` getting one;
    findings are labelled with their rank; fields marked `SUMMED_OVER_RANKS` are summed; other
    fields keep their value when every rank agrees, else become `{rank: value}`. A single
    rank's section is returned as it is.
    """
    items = sorted(parts.items())
    if not items:
        return None
    if len(items) == 1:
        return items[0][1]
    first = items[0][1]
    if not dataclasses.is_dataclass(first) or isinstance(first, type):
        return dict(items)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(first):
        per_rank = [(rank, getattr(section, f.name)) for rank, section in items]
        if f.name == "findings":
            values[f.name] = tuple(_finding(r, x) for r, v in per_rank for x in v)
        elif all(isinstance(v, tuple) for _, v in per_rank):
            stacked = [x for r, v in per_rank for x in _rows(r, v)]
            if all(isinstance(x, str) for x in stacked):  # notes: once each
                stacked = list(dict.fromkeys(stacked))
            values[f.name] = tuple(stacked)
        elif f.metadata.get(ACROSS_RANKS) == "sum":
            known = [v for _, v in per_rank if v is not None]
            values[f.name] = sum(known) if known else None
        elif all(v == per_rank[0][1] for _, v in per_rank):
            values[f.name] = per_rank[0][1]
        else:
            values[f.name] = {r: v for r, v in per_rank}
    return dataclasses.replace(first, **values)
