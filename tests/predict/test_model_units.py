"""Units of the projected timeline and the device model: the host-clock map, the allocator,
MME efficiency, fusion, collectives (no emulated run needed)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")

from hpusim.allocator import DeviceAllocator
from hpusim.device_model import (
    ENGINE_MME,
    ENGINE_NIC,
    ENGINE_TPC,
    DeviceTimeline,
    load_profile,
    profile_citations,
)
from hpusim.projection import HostClock, MeasuredClock


def test_every_profile_constant_has_a_source() -> None:
    from dataclasses import fields

    from hpusim.device_model import DeviceProfile, _profile_data

    sources = set(_profile_data()["_sources"])
    for name in ("gaudi2", "gaudi3"):
        cites = profile_citations(name)
        data = _profile_data()[name]
        keys = [f.name for f in fields(DeviceProfile) if f.name not in ("name", "mme", "tpc")]
        keys += [f"mme.{k}" for k in data["mme"]]
        keys += [f"tpc.{k}" for k in data["tpc"] if k != "ops_per_element"]
        keys += [f"tpc.ops_per_element.{k}" for k in data["tpc"]["ops_per_element"]]
        for key in keys:
            note = cites.get(key, "")
            assert note, f"{name}.{key} has no citation"
            assert note.startswith(("ASSUMPTION", "FITTED")) or any(
                src in note for src in sources
            ), f"{name}.{key}: {note!r} names no source"


# --- the host clock ---------------------------------------------------------------------------


def test_clock_removes_bracketed_time_and_adds_modeled_costs() -> None:
    c = HostClock(origin_ns=0)
    c.enter(1_000, "wall")  # 1 us of script time
    c.op(50_000, 6_000)  # the op ran 49 us on CPU; the bridge costs 6 us
    c.exit(60_000)  # recording overhead removed
    assert c.map_start(1_000) == 1_000
    assert c.map_end(50_000) == 7_000
    assert c.map_end(60_000) == 7_000
    c.enter(70_000, "wall")  # 10 us of script time after the op
    c.exit(71_000)
    assert c.map_start(70_000) == 17_000


def _fake_thread_clocks(
    monkeypatch: pytest.MonkeyPatch, now: list[int], cpu: list[int], delay: list[int]
) -> None:
    """The clock's readings of the thread's CPU time and run-queue wait, from the lists."""
    import hpusim.projection

    monkeypatch.setattr(hpusim.projection, "thread_time_ns", lambda: cpu[0])
    monkeypatch.setattr(
        hpusim.projection.RunDelay, "snapshot", lambda self: (now[0], cpu[0], delay[0])
    )


def test_clock_pinned_time_precedes_every_later_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """A profiler's base time (`pin`) is never after an event recorded later: the thread was
    busy up to the base (CPU time = wall), then descheduled (no CPU) until its next op."""

    now, cpu, delay = [1_000_000], [0], [0]
    _fake_thread_clocks(monkeypatch, now, cpu, delay)
    for pinned in (False, True):
        now[0] = 1_000_000
        c = HostClock(origin_ns=1_000_000)
        cpu[0] += 1_000_000  # 1 ms busy
        now[0] = 2_000_000
        base = c.pin(2_000_000) if pinned else c.at(2_000_000)
        delay[0] += 9_000_000
        now[0] = 11_000_000
        c.enter(11_000_000)  # 9 ms descheduled (waiting for a CPU)
        c.exit(11_000_000)
        later = c.map_start(3_000_000)  # an event 1 ms after the base
        assert (later >= base) is pinned, (pinned, base, later)  # unpinned: 0.8 ms before it


def test_clock_jumps_map_a_start_before_and_an_end_after() -> None:
    c = HostClock(origin_ns=0)
    c.enter(100, "wall")
    c.advance(200, 5_000)  # a modeled compile blocks the host at t=200
    c.exit(300)
    assert c.map_start(200) == 100  # an event starting at the jump starts before it
    assert c.map_end(200) == 5_100  # and one ending there ends after it
    assert c.map_end(300) == 5_100  # the rest of the bracket is removed


def test_clock_wait_for_the_device_and_drop_mode() -> None:
    c = HostClock(origin_ns=0)
    c.enter(1_000, "wall")
    assert c.wait_until(2_000, 50_000) == 49_000  # the host waits for the device
    assert c.wait_until(2_000, 10_000) == 0  # already past
    c.exit(3_000)
    c.enter(500_000, "drop")  # framework glue: nothing kept
    c.exit(500_100)
    assert c.map_end(500_100) == 50_000


def test_clock_cpu_mode_counts_a_sleep_but_not_a_wait_for_a_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A gap's kept time is its CPU time and the time its thread was blocked (a sleep lasts as
    long on a Gaudi host), not the time it waited for a CPU (a loaded machine's)."""
    now, cpu, delay = [0], [0], [0]
    _fake_thread_clocks(monkeypatch, now, cpu, delay)
    c = HostClock(origin_ns=0, glue_ns=100_000)
    c.enter(0)
    c.exit(0)
    cpu[0] += 2_000_000  # 2 ms of the script's Python
    delay[0] += 30_000_000  # 30 ms runnable, waiting for a CPU
    now[0] = 52_000_000
    c.enter(52_000_000)  # and 20 ms asleep
    assert c._p[-1] == 22_000_000
    c.exit(52_000_000)
    cpu[0] += 50_000  # 50 us of glue and 5 ms waiting for a CPU: nothing kept
    delay[0] += 5_000_000
    now[0] = 57_050_000
    c.enter(57_050_000)
    assert c._p[-1] == 22_000_000
    c.exit(57_050_000)


def test_clock_counts_a_real_sleep() -> None:
    import time

    c = HostClock()
    t0 = time.perf_counter_ns()
    c.enter(t0, "cpu")
    c.exit(time.perf_counter_ns())
    time.sleep(0.05)  # blocked: no CPU used, but the script's own time
    t = time.perf_counter_ns()
    before = c.map_end(t0)
    c.enter(t, "cpu")
    kept = c._p[-1] - before
    c.exit(time.perf_counter_ns())
    if c._delay is None:  # no run-queue readings on this system: CPU time only
        assert kept < 20_000_000
    else:  # the sleep less any wait for a CPU after it (on a loaded machine)
        assert 40_000_000 <= kept <= t - t0, kept


def test_measured_clock_is_the_identity() -> None:
    c = MeasuredClock()
    assert c.at(123) == 123 and c.map_start(5) == 5 and c.wait_until(1, 10) == 0


# --- the allocator ----------------------------------------------------------------------------


class _T:
    _gid = 0


def test_allocator_views_share_storage_and_the_peak_and_oom_point() -> None:
    alloc = DeviceAllocator(capacity_bytes=1_000)
    a, view, b = _T(), _T(), _T()
    alloc.alloc(a, 600, "aten::empty")
    alloc.share(view, a._gid)
    assert alloc.in_use == 600
    alloc.release(a._gid)  # the base dies, the view keeps the storage
    assert alloc.in_use == 600 and alloc.alive(view._gid)
    alloc.alloc(b, 500, "aten::mm")
    assert alloc.max_in_use == alloc.peak == 1_100
    assert alloc.oom_at is not None and alloc.oom_at.op == "aten::mm"
    assert "aten::mm" in alloc.oom_at.text()
    alloc.release(view._gid)
    assert alloc.in_use == 500 and not alloc.alive(a._gid)
    assert (alloc.num_allocs, alloc.num_frees, alloc.max_alloc_size) == (2, 1, 600)


# --- the device model -------------------------------------------------------------------------


def test_a_constant_without_a_source_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above reads every constant: one with an empty note is caught."""
    import hpusim.device_model as dm

    data = dm._profile_data()
    data["gaudi2"]["citations"]["tpc.ops_per_element.softmax"] = ""
    monkeypatch.setattr(dm, "_profile_data", lambda: data)
    with pytest.raises(AssertionError, match="softmax has no citation"):
        test_every_profile_constant_has_a_source()


def test_mme_time_depends_on_the_shape() -> None:
    """Square GEMMs fill the MME; skinny ones and short-K ones (roll-up bound) do not."""
    import torch

    tl = DeviceTimeline(load_profile("gaudi2"))

    def tflops(m: int, n: int, k: int) -> float:
        op = tl.model_op("mm", [(m, k), (k, n)], [torch.bfloat16] * 2, m * n, 0)
        return op.flops / op.dur / 1e3

    big = tflops(8192, 8192, 8192)
    assert tflops(64, 8192, 8192) < big / 1.5  # half of 4xw's 128 rows, port-constrained
    assert tflops(8192, 8192, 64) < big / 3  # K = 64 < the 256-cycle roll-up


def test_a_peak_shaped_matmul_reaches_80_percent_of_peak() -> None:
    import torch

    p = load_profile("gaudi2")
    tl = DeviceTimeline(p)
    n = 8192
    m = tl.model_op("mm", [(n, n), (n, n)], [torch.bfloat16] * 2, n * n, 3 * n * n * 2)
    assert m.engine == ENGINE_MME
    achieved = m.flops / m.dur * 1e9 / 1e12  # TFLOP/s
    assert achieved >= 0.8 * p.mme_bf16_tflops
    fp8 = tl.model_op(
        "fp8_gemm_v2", [(n, n), (n, n)], [torch.float8_e4m3fn] * 2, n * n, 0, [False, True]
    )
    assert fp8.dur < 0.6 * m.dur  # the FP8 rate


def test_a_matrix_vector_product_runs_on_tpc() -> None:
    import torch

    tl = DeviceTimeline(load_profile("gaudi2"))
    m = tl.model_op("bmm", [(4096, 1, 128), (4096, 128, 512)], [torch.bfloat16] * 2, 4096 * 512, 0)
    assert m.engine == ENGINE_TPC


def _cost(engine: int, nbytes: int, dur: int, fusible: bool, name: int) -> Any:
    return SimpleNamespace(
        engine=engine, flops=nbytes // 2, nbytes=nbytes, dur=dur, fusible=fusible, low=True,
        dev_name=name,
    )  # fmt: skip


def test_fusion_writes_only_what_is_read_later_or_kept() -> None:
    tl = DeviceTimeline(load_profile("gaudi2"))
    mb = 1 << 20
    ops = [
        (None, _cost(ENGINE_TPC, 3 * mb, 10, True, 1)),  # a = f(x)      x, a: 1 MB each
        (None, _cost(ENGINE_TPC, 3 * mb, 10, True, 2)),  # b = g(a)
        (None, _cost(ENGINE_TPC, 3 * mb, 10, True, 3)),  # c = h(b)
        (None, _cost(ENGINE_MME, 3 * mb, 10, False, 4)),  # d = mm(c)
    ]
    deps = [
        (((1, mb),), ((2, mb),)),
        (((2, mb),), ((3, mb),)),
        (((3, mb),), ((4, mb),)),
        (((4, mb),), ((5, mb),)),
    ]
    nodes = tl.run_graph(ops, deps, 0, alive=lambda g: False)
    fused = [n for n in nodes if isinstance(n[0], tuple)]
    assert len(fused) == 1 and fused[0][0] == (1, 2, 3)
    assert fused[0][5] == 2 * mb  # read x once, write c once (a and b stay on chip)
    kept = tl.run_graph(ops, deps, 0, alive=lambda g: g == 2)  # a is saved for backward
    assert next(n for n in kept if isinstance(n[0], tuple))[5] == 3 * mb


def test_independent_mme_and_tpc_work_overlaps_in_a_graph() -> None:
    tl = DeviceTimeline(load_profile("gaudi2"))
    ops = [
        (None, _cost(ENGINE_MME, 8, 100_000, False, 1)),
        (None, _cost(ENGINE_TPC, 8, 100_000, False, 2)),
    ]
    deps = [(((1, 4),), ((2, 4),)), (((3, 4),), ((4, 4),))]  # no shared storage
    nodes = tl.run_graph(ops, deps, 0)
    assert nodes[0][2] == nodes[1][2]  # both start together
    dependent = [(((1, 4),), ((2, 4),)), (((2, 4),), ((4, 4),))]
    tl2 = DeviceTimeline(load_profile("gaudi2"))
    nodes = tl2.run_graph(ops, dependent, 0)
    assert nodes[1][2] >= nodes[0][2] + nodes[0][3]


def test_collectives_scale_with_cards_and_links() -> None:
    g2 = DeviceTimeline(load_profile("gaudi2"), cards=8)
    g3 = DeviceTimeline(load_profile("gaudi3"), cards=8)
    size = 1 << 30
    ar8 = g2.collective_ns("all_reduce", size)
    assert g2.collective_ns("all_reduce", size, cards=1) < ar8
    assert g2.collective_ns("all_gather", size) < ar8
    assert g3.collective_ns("all_reduce", size) < ar8  # 200 GbE links
    assert g2.collective_ns("all_reduce", size, cards=64) > ar8  # scale-out beyond a server
    # 2 (N-1)/N of the data over 7 peers x 3 links x 100 Gb/s at 80 % (210 GB/s): 8.9 ms
    assert 8e6 < ar8 < 10e6
    assert ENGINE_NIC == 4


def test_fused_hpu_ops_are_one_op_priced_from_fused_costs() -> None:
    import torch
    from hpusim.fused_costs import fused_op_cost

    tl = DeviceTimeline(load_profile("gaudi2"))
    p = tl.profile
    rms = fused_op_cost("hpu::rms_norm", [(4096, 4096), (4096,)], ["bfloat16"] * 2)
    assert rms is not None
    m = tl.model_fused(rms, [torch.bfloat16] * 2)
    assert m.engine == ENGINE_TPC and m.nbytes == rms.nbytes and not m.fusible
    assert m.dur >= rms.nbytes / p.hbm_bytes_per_ns  # memory-bound at the achievable rate
    q = (8, 32, 2048, 128)
    sdpa = fused_op_cost(
        "hpu::sdpa_recomp_fwd", [q, q, q, None, None], ["bfloat16"] * 5, is_causal=True
    )
    assert sdpa is not None
    s = tl.model_fused(sdpa, [torch.bfloat16] * 3)
    # the MME part at the fused-attention efficiency sets the time; the softmax's TPC part
    # overlaps it inside the same kernel instead of adding to it
    mme_ns = tl.mme_ns(sdpa.gemms, "bf16") * sdpa.mme_fraction
    tpc_ns = tl.tpc_duration(sdpa.vector_flops, 0, True)
    assert s.engine == ENGINE_MME and s.flops == sdpa.flops
    assert max(mme_ns, tpc_ns) <= s.dur <= max(mme_ns, tpc_ns) + p.min_op_ns + 1
    assert s.dur < mme_ns + tpc_ns


def test_profile_overrides_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`HPUSIM_PROFILE_OVERRIDES` replaces numeric fields (what-if runs); a typo is an error."""
    from hpusim.device_model import OVERRIDES_ENV

    base = load_profile("gaudi2").host_lazy_op_ns
    monkeypatch.setenv(OVERRIDES_ENV, '{"host_lazy_op_ns": 12345}')
    load_profile.cache_clear()
    try:
        assert load_profile("gaudi2").host_lazy_op_ns == 12345 != base
        monkeypatch.setenv(OVERRIDES_ENV, '{"host_lazy_op_nss": 1}')
        load_profile.cache_clear()
        with pytest.raises(ValueError, match="not a numeric profile field"):
            load_profile("gaudi2")
        monkeypatch.setenv(OVERRIDES_ENV, "[1]")
        load_profile.cache_clear()
        with pytest.raises(ValueError, match="must map profile fields"):
            load_profile("gaudi2")
    finally:
        monkeypatch.delenv(OVERRIDES_ENV)
        load_profile.cache_clear()
