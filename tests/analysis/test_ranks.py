"""ranks: steps per rank (never summed across ranks), the step split (exclusive compute /
exposed communication / exposed memory / idle, the same in every report), and stragglers only
beyond a rank's own step noise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hpuprof
from hpuprof.analysis import analyze
from hpuprof.analysis.ranks import analyze_ranks
from hpuprof.trace.model import Trace
from tests.tracebuild import make_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def _rank_rows(rank: int, step_ns: list[int]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    t0 = 0
    for s, dur in enumerate(step_ns):
        rows.append({"name": f"ProfilerStep#{s}", "kind": "user_annotation", "cat": "user_annotation", "ts_ns": t0, "dur_ns": dur, "rank": rank})  # fmt: skip
        dev = {"kind": "kernel", "cat": "kernel", "engine": "GPU", "rank": rank, "pid": "0"}
        # compute 0-400 us, all-reduce 300-600 us (100 us hidden under compute), copy 700-750 us
        rows.append({**dev, "name": "gemm", "ts_ns": t0, "dur_ns": 400_000, "tid": "7"})
        rows.append({**dev, "name": "ncclKernel_AllReduce", "ts_ns": t0 + 300_000, "dur_ns": 300_000, "tid": "8"})  # fmt: skip
        rows.append({**dev, "kind": "memcpy", "name": "Memcpy DtoH", "ts_ns": t0 + 700_000, "dur_ns": 50_000, "tid": "9"})  # fmt: skip
        t0 += dur
    return rows


def _two_ranks(slow: list[int]) -> Trace:
    return make_trace(_rank_rows(0, [1_000_000] * 4) + _rank_rows(1, slow))


def test_steps_are_per_rank_and_the_split_is_exclusive() -> None:
    rep = analyze_ranks(_two_ranks([1_000_000] * 4))
    assert rep.steps_per_rank == 4 and len(rep.steps) == 8
    assert rep.mean_step_ns == 1_000_000
    r0 = rep.ranks[0]
    assert (r0.compute_ns, r0.exposed_comm_ns, r0.exposed_memory_ns) == (
        1_600_000,
        800_000,
        200_000,
    )
    assert r0.overlapped_comm_ns == 400_000
    parts = r0.compute_ns + r0.exposed_comm_ns + r0.exposed_memory_ns + r0.idle_ns
    assert parts == r0.covered_ns == 4_000_000
    pcts = (r0.compute_pct, r0.exposed_comm_pct, r0.exposed_memory_pct, r0.idle_pct)
    assert pcts == (40.0, 20.0, 5.0, 35.0)
    assert rep.stragglers == () and not rep.findings


def test_every_report_splits_a_step_the_same_way() -> None:
    """The bottleneck report's steps carry the very split of the ranks report's steps (one
    definition, `step_split`), a rank without device ops idle all along in both."""
    step = {"name": "ProfilerStep#0", "kind": "user_annotation", "cat": "user_annotation"}
    op = {"name": "aten::add", "kind": "cpu_op", "cat": "cpu_op", "ts_ns": 10, "dur_ns": 100}
    cpu_only = [{**step, "ts_ns": 0, "dur_ns": 500_000, "rank": 2}, {**op, "rank": 2}]
    trace = make_trace(_rank_rows(0, [1_000_000, 900_000]) + cpu_only)
    report = analyze(trace, reports="bottleneck,ranks")
    split = ("rank", "step", "duration_ns", "compute_ns", "exposed_comm_ns", "exposed_memory_ns", "idle_ns")  # fmt: skip
    from_ranks = [tuple(getattr(s, f) for f in split) for s in report.sections["ranks"].steps]
    from_bottleneck = [
        tuple(getattr(s, f) for f in split) for s in report.sections["bottleneck"].steps
    ]
    assert from_bottleneck == from_ranks
    assert from_ranks[0][3:] == (400_000, 200_000, 50_000, 350_000)
    assert from_ranks[-1][2:] == (500_000, 0, 0, 0, 500_000)


def test_a_steadily_slower_rank_is_a_straggler() -> None:
    rep = analyze_ranks(_two_ranks([1_500_000, 1_510_000, 1_490_000, 1_500_000]))
    # two ranks: the median rank is halfway, rank 1 is 20% above it
    assert rep.stragglers == (1,)
    [finding] = rep.findings
    assert finding.report == "ranks" and "rank 1 is a straggler" in finding.title
    assert "hpu" not in finding.advice.lower()


def test_a_rank_slower_only_by_its_own_jitter_is_no_straggler() -> None:
    jittery = [600_000, 1_900_000, 700_000, 2_000_000]  # median 1.3 ms, noise (MAD) 0.65 ms
    rep = analyze_ranks(_two_ranks(jittery))
    assert rep.ranks[1].vs_median_pct > 10 and rep.stragglers == ()


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="sample_traces/ not present")
def test_two_rank_sample_has_four_steps_per_rank() -> None:
    rep = analyze(hpuprof.load(SAMPLES / "emulated_two_ranks", cache=False), reports="ranks")
    ranks = rep.sections["ranks"]
    assert ranks.steps_per_rank == 4 and [r.steps for r in ranks.ranks] == [4, 4]


def test_a_last_step_the_profiler_stopped_in_is_left_out_of_the_means() -> None:
    """The last prof.step() opens a step that the profiler's exit closes: no ops in it. It
    is left out of the steps, the means and the split, with a note; a last step with its ops
    (a shorter last batch) is kept."""
    rows = _rank_rows(0, [1_000_000] * 3)
    for s in range(3):
        rows.append({"name": "aten::mm", "ts_ns": s * 1_000_000 + 10, "dur_ns": 100_000})
    rows.append({"name": "ProfilerStep#3", "kind": "user_annotation", "cat": "user_annotation", "ts_ns": 3_000_000, "dur_ns": 49_000})  # fmt: skip
    rep = analyze_ranks(make_trace(rows))
    assert rep.steps_per_rank == 3 and rep.mean_step_ns == 1_000_000
    assert [(c.step, c.ops, c.typical_ops) for c in rep.cut_steps] == [(3, 0, 1.0)]
    assert rep.notes[0].startswith("rank 0, step 3 left out of the step means")
    rows.append({"name": "aten::mm", "ts_ns": 3_000_010, "dur_ns": 30_000})  # its op: kept
    kept = analyze_ranks(make_trace(rows))
    assert kept.steps_per_rank == 4 and kept.cut_steps == ()


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="sample_traces/ not present")
def test_counts_summed_over_two_ranks_say_so_in_every_format() -> None:
    from hpuprof.render import get_renderer

    rep = analyze(hpuprof.load(SAMPLES / "emulated_two_ranks", cache=False))
    total = rep.meta["key_figures"]["compilations"]
    for fmt in ("text", "md", "html"):
        out = get_renderer(fmt, width=200).render(rep) if fmt == "text" else get_renderer(fmt).render(rep)  # fmt: skip
        text = out if isinstance(out, str) else out.decode()
        assert "Compilations (total over 2 ranks)" in text, fmt
        assert "Step time (mean per rank)" in text, fmt
    single = analyze(hpuprof.load(SAMPLES / "emulated_lazy", cache=False))
    assert "total over" not in get_renderer("text", width=200).render(single)
    assert isinstance(total, int) and total > 0
