"""Dynamicity report: compilations and recompilations, their causes, shapes, dynamic ops.

Sources, best first: our compile events (`hpuprof.event` compile / dynamo_compile, with
`hpuprof.cause`); otherwise (CUDA/CPU traces, real Gaudi traces without compile events) the
report derives dynamicity from changes of `input_dims` per op, and says so in `source`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import orjson
import pandas as pd

from hpuprof.analysis._common import (
    cat_test,
    factor,
    host_ops,
    isin,
    positions,
    records,
    steps_in,
    strs,
    without_args,
)
from hpuprof.analysis.advice import advise
from hpuprof.analysis.bucketing import BucketPlan, recommend_buckets
from hpuprof.analysis.device import TraceDevice, trace_device
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.report import SUMMED_OVER_RANKS
from hpuprof.trace.model import Trace

DYNAMIC_OP_NAMES = (
    "aten::nonzero",
    "aten::unique",
    "aten::_unique",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::unique_dim",
    "aten::masked_select",
    "aten::argwhere",
    "aten::nonzero_static",
    "aten::arange",
)
SHAPE_ONLY_OPS = frozenset({"aten::arange"})
"""Dynamic-shape ops whose output size needs no device value (no host sync off a Gaudi)."""
DYNAMIC_FLUSH_REASONS = ("non zero", "unique")
NEW_GRAPH_KINDS = ("", "new_graph")
"""Recompilations of one graph/module/call site at which the finding is critical."""


@dataclass(frozen=True)
class Compilation:
    """One compilation event and its cause."""

    rank: int
    ts_ns: int
    dur_ns: int
    step: int
    graph: str
    module: str
    call_site: str
    event: str
    recompile: bool
    cause_kind: str
    cause_input: int | None
    cause_from: str
    cause_to: str
    cause_text: str
    eager: bool = False
    cause: str = ""
    """The cause in words: "shape of input 1: [16, 32] -> [24, 32]"."""


@dataclass(frozen=True)
class GroupStats:
    """Compilations of one graph / module / call site.

    `cause_summary` counts the recompile causes in words ("shape x2, scalar x4").
    """

    key: str
    compilations: int
    recompilations: int
    time_ns: int
    causes: tuple[dict[str, Any], ...]
    cause_summary: str = ""


def cause_words(kind: str, inp: int | None, frm: str, to: str, text: str) -> str:
    """A compile cause in words, from its parts."""
    of = f" of input {inp}" if inp is not None else ""
    if frm or to:
        return f"{kind}{of}: {frm or '?'} -> {to or '?'}"
    if kind == "new_graph":
        return f"first compile ({text})" if text else "first compile"
    return f"{kind}{of}: {text}" if text else f"{kind}{of}"


def _natural(key: str) -> tuple[Any, ...]:
    """Sort key with numbers in numeric order (graph 2 before graph 10)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", key))


@dataclass(frozen=True)
class StepCompiles:
    """Compilations over time, per step."""

    step: int
    compilations: int
    recompilations: int
    time_ns: int


@dataclass(frozen=True)
class ShapeHistogram:
    """Distinct input shapes of one op (what `data_dynamicity` prints, per op)."""

    op: str
    calls: int
    unique_shapes: int
    verdict: str
    shapes: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class DynamicOp:
    """A data-dependent-shape op seen in the trace."""

    op: str
    count: int
    host_time_ns: int
    steps: tuple[int, ...]


@dataclass(frozen=True)
class LazyPortEstimate:
    """What the recorded input shapes imply for a Gaudi lazy-mode port (no compile events).

    Lazy mode compiles a step's graphs once per distinct set of input shapes, so each distinct
    step shape signature (the ops and input shapes of a step) compiles them once more.

    Args:
        steps: steps with recorded input shapes (on the rank with the most signatures).
        graphs: distinct step shape signatures: how often the step's graphs would compile.
        recompilations: graphs - 1.
        label: the estimate in words, saying it is one.
    """

    steps: int
    graphs: int
    recompilations: int
    label: str


def lazy_port_estimate(host: pd.DataFrame, on_hpu: bool) -> LazyPortEstimate | None:
    """Distinct step shape signatures (the set of (op, input shapes) a step ran) per rank, the
    largest count; None below two steps with shapes."""
    shaped = host[(host["step"].to_numpy() >= 0) & (strs(host["input_dims"]) != "")]
    if shaped.empty:
        return None
    ncodes, _ = factor(shaped["name"])
    dcodes, _ = factor(shaped["input_dims"])
    frame = pd.DataFrame(
        {
            "rank": shaped["rank"].to_numpy(),
            "step": shaped["step"].to_numpy(),
            "pair": ncodes.astype(np.int64) * (int(dcodes.max()) + 2) + dcodes,
        }
    )
    # a step's signature: the distinct (op, input shapes) pairs it ran
    distinct = frame.drop_duplicates().sort_values(["rank", "step", "pair"], kind="stable")
    signatures = distinct.groupby(["rank", "step"], sort=False)["pair"].agg(tuple)
    best: tuple[int, int] | None = None
    for _, per_rank in signatures.groupby(level="rank"):
        if len(per_rank) < 2:
            continue
        got = (int(per_rank.nunique()), len(per_rank))
        best = got if best is None or got > best else best
    if best is None:
        return None
    graphs, steps = best
    times = "once" if graphs == 1 else f"{graphs} times"
    what = (
        f"{graphs} distinct step input shape{'s' if graphs != 1 else ''} over {steps} steps: "
        f"the step's graphs would compile {times} ({graphs - 1} recompilations)"
    )
    prefix = (
        "no compile events recorded; from input shapes"
        if on_hpu
        else "if ported to Gaudi lazy mode"
    )
    return LazyPortEstimate(steps, graphs, graphs - 1, f"{prefix}: {what}")


@dataclass(frozen=True)
class DynamicityReport:
    """Result of `analyze_dynamicity`.

    `source` is "compile events" or "no compile events in this trace"; without compile events
    every compilation count is None (unknown: a CUDA, ROCm or CPU trace compiles nothing a
    Gaudi would) and `port_estimate` says what the input shapes imply for a Gaudi lazy-mode
    port, clearly labelled. `bucketing` is set only where buckets save compilations.
    `compilations` counts every compile (lazy graphs, eager-compiler recipes, dynamo);
    `graph_compilations` / `graph_compile_time_ns` only the graph compiles the bridge's
    `graph_compilation` metric counts (not eager-compiler recipes, not dynamo's own compile).
    `recompile_table` / `recompile_counts` are the two tables of
    `detect_recompilation_auto_model` (gaudi.md 2.2), exportable as CSV. Its `New out` column
    is None (unknown): a trace records op input shapes, never a module's output shape.
    """

    source: str
    compilations: int | None = field(metadata=SUMMED_OVER_RANKS)
    recompilations: int | None = field(metadata=SUMMED_OVER_RANKS)
    compile_time_ns: int | None = field(metadata=SUMMED_OVER_RANKS)
    graph_compilations: int | None = field(metadata=SUMMED_OVER_RANKS)
    graph_compile_time_ns: int | None = field(metadata=SUMMED_OVER_RANKS)
    timeline: tuple[StepCompiles, ...]
    events: tuple[Compilation, ...]
    by_graph: tuple[GroupStats, ...]
    by_module: tuple[GroupStats, ...]
    by_call_site: tuple[GroupStats, ...]
    shape_histograms: tuple[ShapeHistogram, ...]
    recompile_table: tuple[dict[str, Any], ...]
    recompile_counts: tuple[dict[str, Any], ...]
    dynamic_ops: tuple[DynamicOp, ...]
    bucketing: BucketPlan | None
    bucketing_target: str
    port_estimate: LazyPortEstimate | None = None
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def verdict(unique: int) -> str:
    """`data_dynamicity`'s verdict line for a number of unique shapes."""
    if unique <= 0:
        return "Dataset looks empty"
    if unique == 1:
        return "There is no dynamicity in input data shapes"
    if unique <= 5:
        return "There is a little dynamicity in input data shapes"
    if unique <= 20:
        return "There is some dynamicity in input data shapes"
    return "There is a lot of dynamicity in input data shapes"


def _cause(text: str) -> dict[str, Any]:
    """The `cause` column's JSON text as a dict ({} when empty)."""
    if not text:
        return {}
    value = orjson.loads(text)
    return value if isinstance(value, dict) else {"kind": "guard", "text": str(value)}


def _compile_events(full: pd.DataFrame) -> list[Compilation]:
    """Compile events in time order, their causes and call sites from the loader's columns.

    A compile of an eager-mode op (`mode` eager: the eager compiler's per-op recipes) is
    marked `eager`; it is a compilation, but not one the bridge's graph_compilation counts.
    """
    ev = without_args(full)
    rows = ev[isin(ev["hpu_event"], ("compile", "dynamo_compile"))]
    rows = rows.sort_values("ts_ns", kind="stable")
    out: list[Compilation] = []
    seen: set[str] = set()
    causes = {c: _cause(c) for c in set(strs(rows["cause"]).tolist())}
    fields = ["rank", "ts_ns", "dur_ns", "step", "graph_id", "name", "module", "call_site"]
    for r in records(rows[[*fields, "hpu_event", "cause", "mode"]].astype(object)):
        cause = causes[str(r["cause"])]
        kind = str(cause.get("kind", ""))
        graph = str(r["graph_id"]) or str(r["name"])
        module = str(r["module"])
        key = module or graph
        recompile = kind not in NEW_GRAPH_KINDS if kind else key in seen
        seen.add(key)
        inp = cause.get("input")
        out.append(
            Compilation(
                rank=int(r["rank"]),
                ts_ns=int(r["ts_ns"]),
                dur_ns=int(r["dur_ns"]),
                step=int(r["step"]),
                graph=graph,
                module=module,
                call_site=str(r["call_site"]),
                event=str(r["hpu_event"]),
                recompile=bool(recompile),
                cause_kind=kind or "unknown",
                cause_input=int(inp) if isinstance(inp, (int, float)) else None,
                cause_from=str(cause.get("from", "")),
                cause_to=str(cause.get("to", "")),
                cause_text=str(cause.get("text", "")),
                eager=str(r["mode"]) == "eager",
                cause=cause_words(
                    kind or "unknown",
                    int(inp) if isinstance(inp, (int, float)) else None,
                    str(cause.get("from", "")),
                    str(cause.get("to", "")),
                    str(cause.get("text", "")),
                ),
            )
        )
    return out


def _group(comps: list[Compilation], attr: str) -> tuple[GroupStats, ...]:
    """Compilations grouped by `attr`, in natural key order (graph 2 before graph 10)."""
    groups: dict[str, list[Compilation]] = {}
    for c in comps:
        key = getattr(c, attr) or "(none)"
        groups.setdefault(key, []).append(c)
    out = []
    for k, v in groups.items():
        kinds: dict[str, int] = {}
        for c in v:
            if c.recompile:
                kinds[c.cause_kind] = kinds.get(c.cause_kind, 0) + 1
        out.append(
            GroupStats(
                key=k,
                compilations=len(v),
                recompilations=sum(c.recompile for c in v),
                time_ns=sum(c.dur_ns for c in v),
                causes=tuple(
                    {
                        "ts_ns": c.ts_ns,
                        "step": c.step,
                        "kind": c.cause_kind,
                        "input": c.cause_input,
                        "from": c.cause_from,
                        "to": c.cause_to,
                        "text": c.cause_text,
                        "recompile": c.recompile,
                        "cause": c.cause,
                    }
                    for c in v
                ),
                cause_summary=", ".join(f"{k} x{n}" for k, n in kinds.items()),
            )
        )
    return tuple(sorted(out, key=lambda g: _natural(g.key)))


def _shape_table(host: pd.DataFrame) -> pd.DataFrame:
    """(op, shape, count) for ops called with recorded shapes; grouped on categories."""
    shaped = host[strs(host["input_dims"]) != ""]
    if shaped.empty:
        return pd.DataFrame(columns=["op", "shape", "count"])
    g = shaped.groupby(["name", "input_dims"], observed=True).size().reset_index(name="count")
    g = g[g["count"] > 0]
    return pd.DataFrame(
        {"op": g["name"].astype(str), "shape": g["input_dims"].astype(str), "count": g["count"]}
    )


def _histograms(table: pd.DataFrame, top_n: int) -> list[ShapeHistogram]:
    if table.empty:
        return []
    per = table.groupby("op").agg(unique=("shape", "size"), calls=("count", "sum"))
    per = per[per["unique"] > 1].sort_values(["unique", "calls"], ascending=False).head(top_n)
    out = []
    for op, row in per.iterrows():
        sub = table[table["op"] == op].sort_values("count", ascending=False)
        out.append(
            ShapeHistogram(
                op=str(op),
                calls=int(row["calls"]),
                unique_shapes=int(row["unique"]),
                verdict=verdict(int(row["unique"])),
                shapes=tuple(
                    (str(s), int(c)) for s, c in zip(sub["shape"], sub["count"], strict=True)
                ),
            )
        )
    return out


def _first_shape(text: str) -> list[int] | None:
    """The first input's shape from `input_dims` JSON text (None when it has none)."""
    try:
        dims = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    first = dims[0] if isinstance(dims, list) and dims and isinstance(dims[0], list) else None
    if first and all(isinstance(x, int) for x in first):
        return [int(x) for x in first]
    return None


_FRAME_RE = re.compile(r"^(?P<file>[^()]+?)\((?P<line>\d+)\): ")
"""A with_stack Python frame's name: `train.py(45): main`."""
_LIBRARY_RE = re.compile(r"site-packages|dist-packages|/torch/|^torch/|^<built-in|^<frozen")


def _script_frame(ev: pd.DataFrame, row: int) -> str:
    """`file.py:123` of the innermost script frame around host op `row`: an op's own
    `call_site`, else the innermost with_stack Python frame outside torch and the
    site-packages; "" when the trace has neither (a runtime event around the op, a flush or a
    compile, is not where the op was called)."""
    for at in _ancestry(ev, row):
        kind = str(ev.at[at, "kind"])
        site = str(ev.at[at, "call_site"] or "")
        if site and kind == "cpu_op":  # not a runtime event (a flush, a compile) around it
            return site
        if kind == "python_function":
            m = _FRAME_RE.match(str(ev.at[at, "name"]))
            if m and not _LIBRARY_RE.search(m["file"]):
                return f"{m['file'].rsplit('/', 1)[-1]}:{m['line']}"
    return ""


def _ancestry(ev: pd.DataFrame, row: int) -> list[int]:
    """`row` and its enclosing slices' labels, innermost first (`parent` links)."""
    parents = ev["parent"].to_numpy(dtype=np.int64)
    out: list[int] = []
    at = row
    while at >= 0 and len(out) < 256:
        pos = int(positions(ev.index, np.array([at]))[0])
        if pos < 0:
            break
        out.append(at)
        at = int(parents[pos])
    return out


def _script_call(ev: pd.DataFrame, row: int) -> tuple[int, str]:
    """The host op the script called that `row` runs inside (its outermost host-op ancestor:
    `aten::randn` for the `aten::normal_` that fills it, `aten::to` for `aten::_to_copy`), and
    its call site in the script ("" when unknown)."""
    ops = [at for at in _ancestry(ev, row) if str(ev.at[at, "kind"]) == "cpu_op"]
    outer = ops[-1] if ops else row
    return outer, _script_frame(ev, outer)


def _origin_label(ev: pd.DataFrame, op: str, row: int, shape: list[int], dim: int) -> str:
    """Where the dynamic dimension enters the step: the op the script called and its call
    site, e.g. `aten::randn's output, dim 1 (at train.py:45; first seen by aten::normal_)`."""
    outer, site = _script_call(ev, row)
    outer_name = str(ev.at[outer, "name"]) if outer in ev.index else op
    where = f"at {site}; " if site else ""
    if outer_name == op:
        return f"{op} input 0, dim {dim} ({where}its first call in each step)"
    own = _first_shape(str(ev.at[outer, "input_dims"] or ""))
    part = "input 0" if own == shape else "output"
    return f"{outer_name}'s {part}, dim {dim} ({where}first seen by {op} in each step)"


def _step_input_dim(
    host: pd.DataFrame, ev: pd.DataFrame | None = None
) -> tuple[list[int], list[int], str]:
    """The model-input dimension that changes from step to step, one size per step.

    Looks at the first call of each op in each step (so different layers' weights, which an op
    like `aten::t` sees one after another within a step, do not count as variation) and picks
    the op that runs earliest in the step whose first input has a dimension that differs
    between steps: the batch or sequence dimension of what the step was fed. Steps where the
    op runs an unusual number of times (warm-up, setup) are left out for that op. With the
    events `ev`, the label follows that dimension back to the script: the op the script called
    (`aten::randn`, not the `aten::normal_` inside it) and its call site where the trace has
    one (our runtime's `call_site`, with_stack frames).
    """
    step = host["step"].to_numpy()
    shaped = (step >= 0) & (strs(host["input_dims"]) != "")
    if shaped.sum() == 0:
        return [], [], ""
    ncodes, names = factor(host["name"])
    dcodes, dims = factor(host["input_dims"])
    frame = pd.DataFrame(
        {
            "op": ncodes[shaped],
            "dims": dcodes[shaped],
            "step": step[shaped],
            "ts": host["ts_ns"].to_numpy()[shaped],
            "row": host.index.to_numpy()[shaped],
        }
    ).sort_values("ts", kind="stable")
    if frame["step"].nunique() < 2:
        return [], [], ""
    frame["order"] = frame.groupby("step").cumcount()
    # steps where an op runs an unusual number of times (setup in the first step: moving the
    # model's weights) do not speak for the op's first call
    calls = frame.groupby(["op", "step"]).size().rename("calls").reset_index()
    mode = calls.groupby("op")["calls"].agg(lambda c: c.mode().iloc[0]).rename("mode")
    calls = calls.join(mode, on="op")
    usual = calls.loc[calls["calls"] == calls["mode"], ["op", "step"]]
    first = frame.drop_duplicates(["op", "step"]).merge(usual, on=["op", "step"])
    # ops ordered by their typical position in a step
    ops = first.groupby("op")["order"].median().sort_values().index.tolist()
    for op in ops:
        rows = first[first["op"] == op]
        shapes = [_first_shape(str(dims[c])) for c in rows["dims"].tolist()]
        known = [s for s in shapes if s is not None]
        if len(known) < 2 or len({len(s) for s in known}) != 1:
            continue
        for d in range(len(known[0])):
            values = [s[d] for s in known]
            if len(set(values)) > 1:
                name = str(names[op])
                label = f"{name} input 0, dim {d} (its first call in each step)"
                if ev is not None:
                    i = next(i for i, s in enumerate(shapes) if s is not None and s[d] != values[0])
                    row = int(rows["row"].iloc[i])
                    label = _origin_label(ev, name, row, shapes[i] or [], d)
                return values, [1] * len(values), label
    return [], [], ""


def _dynamic_ops(ev: pd.DataFrame, host: pd.DataFrame) -> list[DynamicOp]:
    index_ops = ("aten::index", "aten::index.Tensor")
    is_index = isin(host["name"], index_ops)
    has_bool = cat_test(host["input_types"], lambda t: "bool" in t)
    is_dyn = isin(host["name"], DYNAMIC_OP_NAMES) | (is_index & has_bool)
    rows = host[is_dyn]
    out: list[DynamicOp] = []
    if not rows.empty:
        op_name = np.where(is_index[is_dyn], "aten::index (boolean mask)", strs(rows["name"]))
        frame = pd.DataFrame(
            {"op": op_name, "dur": rows["dur_ns"].to_numpy(), "step": rows["step"].to_numpy()}
        )
        for op, grp in frame.groupby("op"):
            steps = steps_in(grp["step"].tolist())
            out.append(DynamicOp(str(op), len(grp), int(grp["dur"].sum()), steps))
    flush = without_args(ev)[isin(ev["flush_reason"], DYNAMIC_FLUSH_REASONS)]
    for reason, grp in flush.groupby(strs(flush["flush_reason"])):
        steps = steps_in(grp["step"].tolist())
        out.append(DynamicOp(f"flush: {reason}", len(grp), int(grp["dur_ns"].sum()), steps))
    return sorted(out, key=lambda d: -d.count)


def _auto_model_tables(
    comps: list[Compilation],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    table1: list[dict[str, Any]] = []
    seen_in: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for c in comps:
        if not c.module:
            continue
        prev = seen_in.setdefault(c.module, set())
        shape = c.cause_to or c.cause_from
        new_in = c.cause_kind in ("shape", "stride", "dtype", "scalar", "new_graph") and (
            shape not in prev
        )
        prev.add(shape)
        if c.recompile:
            counts[c.module] = counts.get(c.module, 0) + 1
            table1.append(
                {
                    "Step": c.step,
                    "Recompiling modules": c.module,
                    "New in": bool(new_in),
                    "New out": None,  # unknown: traces record op inputs, not outputs
                    "Class": "",
                    "Location": c.call_site,
                    "Comment": "Recompiled due to new input shape"
                    if new_in
                    else "Already processed input shape still recompiled. Maybe dyn ops",
                }
            )
    table2 = [
        {"Module name": m, "Recompile count": n}
        for m, n in sorted(counts.items(), key=lambda kv: -kv[1])
    ]
    return table1, table2


def analyze_dynamicity(trace: Trace, options: AnalysisOptions | None = None) -> DynamicityReport:
    """Compilations, recompilations and causes, shape histograms, dynamic ops, buckets."""
    options = options or AnalysisOptions()
    ev = trace.events
    device = trace_device(trace)
    host = host_ops(ev)
    comps = _compile_events(ev)
    table = _shape_table(host)
    notes: list[str] = []
    hists = _histograms(table, options.top_n)
    timeline: list[StepCompiles] = []
    n_comp: int | None = None
    n_re: int | None = None
    t_comp: int | None = None
    n_graph: int | None = None
    t_graph: int | None = None
    port: LazyPortEstimate | None = None
    if comps:
        source = "compile events"
        frame = pd.DataFrame(
            {
                "step": [c.step for c in comps],
                "re": [c.recompile for c in comps],
                "dur": [c.dur_ns for c in comps],
            }
        )
        for s, grp in frame.groupby("step"):
            timeline.append(
                StepCompiles(int(str(s)), len(grp), int(grp["re"].sum()), int(grp["dur"].sum()))
            )
        n_comp = len(comps)
        n_re = sum(c.recompile for c in comps)
        t_comp = sum(c.dur_ns for c in comps)
        graph = [c for c in comps if not c.eager and c.event == "compile"]
        n_graph, t_graph = len(graph), sum(c.dur_ns for c in graph)
    else:
        source = "no compile events in this trace"
        port = lazy_port_estimate(host, device.is_hpu)
        notes.append(
            "no compile events: compilation counts are unknown"
            + (f"; {port.label}" if port else "")
        )
    bucket: BucketPlan | None = None
    sizes, counts, target = _step_input_dim(host, without_args(ev))
    if not sizes and hists:
        notes.append(
            "no bucketing advice: it needs two or more steps whose inputs differ, to tell the "
            "fed batch/sequence dimension from weight shapes"
        )
    if sizes and (device.is_hpu or comps):
        plan = recommend_buckets(sizes, counts, options.bucket_k)
        if plan.compilations_saved > 0:
            bucket = plan
        else:
            notes.append(
                f"bucketing does not help here: {plan.distinct_sizes} distinct sizes of "
                f"{target} already fit in {options.bucket_k} buckets"
            )
    t1, t2 = _auto_model_tables(comps)
    rep = DynamicityReport(
        source=source,
        compilations=n_comp,
        recompilations=n_re,
        compile_time_ns=t_comp,
        graph_compilations=n_graph,
        graph_compile_time_ns=t_graph,
        timeline=tuple(timeline),
        events=tuple(comps),
        by_graph=_group(comps, "graph"),
        by_module=_group(comps, "module"),
        by_call_site=_group(comps, "call_site"),
        shape_histograms=tuple(hists),
        recompile_table=tuple(t1),
        recompile_counts=tuple(t2),
        dynamic_ops=tuple(_dynamic_ops(ev, host)),
        bucketing=bucket,
        bucketing_target=target if bucket else "",
        port_estimate=port,
        notes=tuple(notes),
    )
    return replace(rep, findings=tuple(dynamicity_findings(rep, options, device)))


def dynamicity_findings(
    rep: DynamicityReport, options: AnalysisOptions, device: TraceDevice
) -> list[Finding]:
    """Recompiling graphs, dynamic ops, and the bucketing opportunity (advice for `device`)."""
    out: list[Finding] = []
    derived = not rep.events
    # group by module when compiles carry one, else by the call site that triggered them (a
    # lazy graph gets a new recipe id per compile, so per-graph counts never add up)
    groups = rep.by_graph
    for candidate in (rep.by_call_site, rep.by_module):
        if candidate and any(g.key != "(none)" for g in candidate):
            groups = candidate
    flagged = [g for g in groups if g.recompilations >= options.recompile_warn]
    recompiles = rep.recompilations or 0
    if not flagged and recompiles >= options.recompile_warn and rep.events:
        whole = GroupStats(
            key="the trace's graphs",
            compilations=rep.compilations or 0,
            recompilations=recompiles,
            time_ns=rep.compile_time_ns or 0,
            causes=tuple(c for g in groups for c in g.causes),
        )
        flagged = [whole]
    b = rep.bucketing
    see_buckets = " (see the bucketing recommendation)" if b else ""
    for g in flagged:  # each one reached options.recompile_warn (the whole trace's count too)
        kinds: dict[str, int] = {}
        for c in g.causes:
            if c["recompile"]:
                kinds[str(c["kind"])] = kinds.get(str(c["kind"]), 0) + 1
        example = next((c for c in g.causes if c["recompile"]), {})
        advice = advise("recompile", device, bucketing=see_buckets)
        if advice is None:
            continue
        out.append(
            Finding(
                "critical" if g.recompilations >= options.recompile_critical else "warning",
                "dynamicity",
                f"{g.key} recompiled {g.recompilations} times ({g.time_ns / 1e6:.1f} ms "
                f"compiling); causes: {', '.join(f'{k} x{v}' for k, v in kinds.items())}",
                "recompilations",
                g.recompilations,
                options.recompile_warn,
                {"key": g.key, "causes": kinds, "example": example},
                advice,
                "recompile_warn",
            )
        )
    dyn_advice = advise("dynamic_ops", device)
    # arange's size comes from its arguments: a shape change (recompile) on a Gaudi, no sync
    dyn_ops = [d for d in rep.dynamic_ops if device.is_hpu or d.op not in SHAPE_ONLY_OPS]
    if dyn_ops and dyn_advice is not None:
        d = dyn_ops[0]
        out.append(
            Finding(
                "warning",
                "dynamicity",
                f"data-dependent shapes: {d.op} x{d.count}"
                + (f" (+{len(dyn_ops) - 1} more)" if len(dyn_ops) > 1 else ""),
                "dynamic_ops",
                float(sum(x.count for x in dyn_ops)),
                0.0,
                {"ops": {x.op: x.count for x in dyn_ops}},
                dyn_advice,
            )
        )
    bucket_advice = (
        advise("bucketing", device, target=rep.bucketing_target, boundaries=list(b.boundaries))
        if b
        else None
    )
    if b and b.compilations_saved > 0 and bucket_advice is not None:
        out.append(
            Finding(
                "info",
                "dynamicity",
                f"{b.distinct_sizes} distinct sizes of {rep.bucketing_target}: buckets "
                f"{list(b.boundaries)} save {b.compilations_saved} compilations for "
                f"{b.padding_pct:.1f}% padding"
                + (" (derived from input shapes)" if derived else ""),
                "distinct_sizes",
                b.distinct_sizes,
                float(len(b.boundaries)),
                {
                    "boundaries": list(b.boundaries),
                    "padding": b.padding,
                    "percentile_heuristic_padding": b.percentile_padding,
                },
                bucket_advice,
            )
        )
    return out
