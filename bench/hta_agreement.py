"""How closely the `distributed` report agrees with HTA 0.5.0 on the shared traces, in figures.

tests/multirank/test_hta_agreement.py asserts the bounds (1 pp, 1%); this prints the measured
differences, per trace and metric, and the largest of each: overlap and idle ratios in
percentage points, queue-length / bandwidth / launch means and critical-path length in percent
of HTA's value, critical-path shares in pp. HTA runs live with `HTA_DISABLE_NS_ROUNDING=1`.

    python bench/hta_agreement.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
TRACES = {
    "trace_filter/sampled_rank-0.json.gz": 0,
    "df_index_resolver/df_index_resolver.json.gz": 1,
    "nccl_parser_config/nccl_data.json.gz": 0,
}
SHARES = {
    "cpu_bound": "cpu_bound_pct",
    "gpu_compute_bound": "compute_bound_pct",
    "gpu_communication_bound": "communication_bound_pct",
    "gpu_kernel_kernel_overhead": "kernel_kernel_overhead_pct",
    "gpu_kernel_launch_overhead": "launch_overhead_pct",
}


def _pandas3_drop() -> None:
    """HTA 0.5.0's critical path calls drop(axis=, columns=), which pandas 3 rejects."""
    import pandas as pd

    drop = pd.DataFrame.drop

    def compat(self: pd.DataFrame, labels: Any = None, *, axis: Any = 0, **kw: Any) -> Any:
        if kw.get("columns") is not None or kw.get("index") is not None:
            return drop(self, labels, **kw)
        return drop(self, labels, axis=axis, **kw)

    pd.DataFrame.drop = compat  # type: ignore[method-assign]


def _rel(ours: float, theirs: float) -> float:
    return abs(ours - theirs) / abs(theirs) * 100 if theirs else abs(ours - theirs)


def compare(path: Path, rank: int) -> dict[str, float]:
    """Largest difference per metric on one trace (pp or % as the module doc says)."""
    from hta.trace_analysis import TraceAnalysis

    import hpuprof
    from hpuprof.analysis._common import step_windows
    from hpuprof.analysis.distributed import rank_partial
    from hpuprof.analysis.distributed_critical_path import critical_path

    ta = TraceAnalysis(trace_files={rank: str(path)}, include_last_profiler_step=True)
    trace = hpuprof.load(path)
    ours = rank_partial(trace.events, rank)
    out: dict[str, float] = {}
    hta_overlap = ta.get_comm_comp_overlap(visualize=False).iloc[0]["comp_comm_overlap_pctg"]
    out["overlap pp"] = abs((ours.overlap.overlap_pct or 0.0) - hta_overlap)
    idle, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False)
    mine = {(r.stream, r.category): r.ratio for r in ours.idle}
    out["idle ratio pp"] = max(
        abs(mine[(int(r["stream"]), r["idle_category"])] - r["idle_time_ratio"]) * 100
        for r in idle.to_dict("records")
    )
    queue = {r.stream: r.mean for r in ours.queue}
    out["queue mean %"] = max(
        _rel(queue[int(s)], row["mean"])
        for (_, s), row in ta.get_queue_length_summary(ranks=[rank])["queue_length"].iterrows()
    )
    bw = {r.kind: r.mean_gbps for r in ours.memory}
    out["bandwidth mean %"] = max(
        _rel(bw[k], row["mean"])
        for (_, k), row in ta.get_memory_bw_summary(ranks=[rank])["memory_bw_gbps"].iterrows()
    )
    launch = ta.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
    row = ours.launch
    assert row is not None
    out["launch means %"] = max(
        _rel(row.cpu_mean_ns, launch["cpu_duration"].mean() * 1000),
        _rel(row.device_mean_ns, launch["gpu_duration"].mean() * 1000),
        _rel(row.delay_mean_ns, launch["launch_delay"].mean() * 1000),
    )
    graph, ok = ta.critical_path_analysis(rank=rank, annotation="ProfilerStep", instance_id=0)
    if ok:
        bd = graph.get_critical_path_breakdown()
        first = step_windows(trace.events).sort_values("start_ns").iloc[0]
        cp, _ = critical_path(
            trace.events, rank, int(first["step"]), int(first["start_ns"]), int(first["end_ns"])
        )
        assert cp is not None
        out["critical path length %"] = _rel(cp.length_ns, bd["duration"].sum() * 1000)
        share = bd.groupby("bound_by")["duration"].sum() / bd["duration"].sum() * 100
        out["critical path shares pp"] = max(
            abs(getattr(cp, attr) - float(share.get(key, 0.0))) for key, attr in SHARES.items()
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=BENCH.parent.parent / "shared")
    a = parser.parse_args()
    data = a.shared / "traces" / "kineto" / "tests" / "data"
    if not data.is_dir():
        raise SystemExit(f"no shared traces at {data}")
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")  # HTA's pandas deprecations
    _pandas3_drop()
    worst: dict[str, float] = defaultdict(float)
    for name, rank in TRACES.items():
        diffs = compare(data / name, rank)
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in diffs.items()), flush=True)
        for k, v in diffs.items():
            worst[k] = max(worst[k], v)
    print(
        "largest difference from HTA 0.5.0: " + ", ".join(f"{k} {v:.3f}" for k, v in worst.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
