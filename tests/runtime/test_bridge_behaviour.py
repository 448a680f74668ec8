"""Behaviours where the emulator follows the bridge 1.19 source (runtime/hpusim/README.md's
fidelity table names the bridge file of each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")


def _lazy_compiles(batch: Any) -> list[dict[str, Any]]:
    return [c for c in runtime_events(batch, "compile") if not c.get("hpuprof.eager")]


def _flush_reasons(batch: Any) -> list[str]:
    return [b["hpuprof.flush_reason"] for b in runtime_events(batch, "graph_build")]


def _train(model: Any, opt: Any, steps: int, lr_steps: list[float] | None = None) -> None:
    import hpusim

    x = torch.randn(4, 8, device="hpu")
    for i in range(steps):
        if lr_steps is not None:
            for g in opt.param_groups:
                g["lr"] = lr_steps[i]
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        hpusim.mark_step()
        opt.step()
        hpusim.mark_step()


def test_torch_adamw_does_not_recompile_every_lazy_step(hpu: Any) -> None:
    from hpusim.sink import get_sink

    hpu("lazy")
    model = torch.nn.Linear(8, 8).to("hpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    _train(model, opt, 2)
    get_sink().drain()
    _train(model, opt, 4)  # bias corrections and step sizes change every step
    assert _lazy_compiles(get_sink().drain()) == []


def test_a_learning_rate_that_reaches_a_recipe_key_still_recompiles(hpu: Any) -> None:
    from hpusim.sink import get_sink

    hpu("lazy")
    from habana_frameworks.torch.hpex.optimizers import FusedAdamW

    model = torch.nn.Linear(8, 8).to("hpu")
    # lazy FusedAdamW passes 1 - weight_decay * lr as a float (the bridge's own TODO says so)
    opt = FusedAdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    _train(model, opt, 2, lr_steps=[1e-3, 1e-3])
    get_sink().drain()
    _train(model, opt, 3, lr_steps=[2e-3, 3e-3, 3e-3])
    causes = [c["hpuprof.cause"] for c in _lazy_compiles(get_sink().drain())]
    assert [c["kind"] for c in causes] == ["scalar", "scalar"]
    assert causes[0]["op"] == "hpu::optimizer_adamw"


def test_step_marker_log_lines_with_the_bridges_reasons(
    hpu: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import hpusim

    hpu("lazy", LOG_LEVEL_PT_IRGRAPH="1", ENABLE_CONSOLE="true")
    t = torch.ones(4, device="hpu")
    (t * 2).sum().item()
    (t + 1).cpu()
    hpusim.mark_step()
    lines = [line for line in capsys.readouterr().out.splitlines() if "step marker due to" in line]
    assert [line.split("step marker due to ")[1] for line in lines] == [
        "local scalar",
        "d2h_maybe_eval",
        "host step marker",
    ]
    assert all("[PT_IRGRAPH" in line and "[debug]" in line for line in lines)


def test_mark_step_publishes_before_it_flushes_and_iter_mark_step_does_not_flush(
    hpu: Any,
) -> None:
    from hpusim import state
    from hpusim.metrics import EventDispatcher, EventId
    from hpusim.sink import get_sink

    hpu("lazy")
    import habana_frameworks.torch.core as htcore

    pending_at_publish: list[int] = []
    handle = EventDispatcher.instance().subscribe(
        EventId.MARK_STEP, lambda ts, params: pending_at_publish.append(len(state.RT.graph))
    )
    try:
        t = torch.ones(4, device="hpu")
        ran: list[int] = []
        htcore.add_step_closure(lambda: ran.append(1))
        t.add_(1)
        get_sink().drain()
        htcore.iter_mark_step()
        assert ran == [1] and _flush_reasons(get_sink().drain()) == []
        htcore.mark_step()
        assert len(pending_at_publish) == 1 and pending_at_publish[0] > 0  # not flushed yet
        assert _flush_reasons(get_sink().drain()) == ["host step marker"]
    finally:
        EventDispatcher.instance().unsubscribe(handle)


def test_compound_op_limit_counts_top_level_ops_views_included(hpu: Any) -> None:
    from hpusim.sink import get_sink

    hpu("lazy", PT_HPU_MAX_COMPOUND_OP_SIZE="4")
    t = torch.ones(4, 4, device="hpu")
    get_sink().drain()
    for _ in range(2):
        t = (t + 1).view(16).t().view(4, 4)  # 4 ops, 3 of them views
    assert _flush_reasons(get_sink().drain()) == ["reaching max accumulated compound op size"] * 2


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (lambda t, m: t[m], "non zero"),
        (lambda t, m: t.__setitem__(m, 0.0), "index_put_frontend_impl_hpu_lazy"),
        (lambda t, m: t.copy_(torch.zeros(4)), "H2D copy"),
    ],
)
def test_flushes_the_emulator_used_to_miss(hpu: Any, action: Any, reason: str) -> None:
    from hpusim.sink import get_sink

    hpu("lazy")
    t = torch.ones(4, device="hpu")
    m = torch.tensor([True, False, True, False], device="hpu")
    t.mul_(2)  # t is now written by the pending graph
    get_sink().drain()
    action(t, m)
    assert _flush_reasons(get_sink().drain())[:1] == [reason]


@pytest.mark.parametrize(
    ("value", "mode"), [(None, "lazy"), ("1", "lazy"), ("2", "lazy"), ("0", "eager")]
)
def test_pt_hpu_lazy_mode_is_read_as_the_1_19_bridge_reads_it(
    hpu: Any, monkeypatch: pytest.MonkeyPatch, value: str | None, mode: str
) -> None:
    if value is None:
        monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)
        assert hpu(None).config().mode == mode
    else:
        assert hpu(None, PT_HPU_LAZY_MODE=value).config().mode == mode


def test_fp64_and_int64_hold_the_devices_32_bit_values(hpu: Any) -> None:
    from hpusim.sink import get_sink

    hpu("eager")
    x = torch.tensor([1 / 3, 2.0**40 + 1], dtype=torch.float64, device="hpu")
    assert x.dtype == torch.float64
    assert x.cpu().tolist() == torch.tensor([1 / 3, 2.0**40 + 1]).tolist()  # fp32 values
    assert (x * 3).cpu()[0].item() == torch.tensor(1 / 3).mul(3).item()
    big = torch.tensor([2**40 + 5], dtype=torch.int64, device="hpu")
    assert big.cpu().item() == 5  # int64 stored as int32 wraps
    rules = {e["hpuprof.rule"] for e in runtime_events(get_sink().drain(), "cast")}
    assert {"fp64_as_fp32", "int64_as_int32"} <= rules


def test_int64_support_keeps_int64_values(hpu: Any) -> None:
    hpu("eager", PT_ENABLE_INT64_SUPPORT="1")
    assert torch.tensor([2**40 + 5], device="hpu").cpu().item() == 2**40 + 5


def test_complex_dtypes_are_refused_as_on_a_gaudi(hpu: Any) -> None:
    hpu("eager")
    with pytest.raises(RuntimeError, match="Complex datatype is not supported on HPU device"):
        torch.zeros(2, dtype=torch.complex64, device="hpu")
    real = torch.tensor([1.0, 2.0], device="hpu")
    assert torch.complex(real, real).device.type == "cpu"  # the bridge computes it on the host


def test_fallback_summary_is_written_at_the_bridges_level(hpu: Any, tmp_path: Path) -> None:
    import hpusim

    hpu("eager")
    torch.digamma(torch.rand(3, device="hpu"))
    hpusim.disable()  # the device is released: the summary is logged at critical level
    log = (tmp_path / "habana_logs" / "pytorch_log.txt").read_text()
    assert "CPU Fallback stats:\n1\taten::digamma" in log and "[critical]" in log


def test_hpu_graph_details_as_the_bridge(hpu: Any) -> None:
    hpu("lazy")
    import habana_frameworks.torch as ht

    g = ht.hpu.HPUGraph()
    g.capture_end()  # without capture_begin: the bridge only logs
    static_in = torch.ones(4, device="hpu")
    g.capture_begin()
    g.mark_user_inputs([static_in])
    static_out = static_in * 2
    g.capture_end()
    g.replayV2([static_in], [torch.full((4,), 3.0, device="hpu")])
    assert static_out.cpu().tolist() == [6.0] * 4
    g.replayV3([torch.full((4,), 5.0, device="hpu")])
    assert static_out.cpu().tolist() == [10.0] * 4
    assert g.get_user_input_match_indices() == [0]
    a, b = torch.ones(2, 3, device="hpu"), torch.ones(2, 3, device="hpu", dtype=torch.bfloat16)
    assert ht.hpu.input_hash(a) == ht.hpu.input_hash(b)  # shape + view hash, no dtype
    assert ht.hpu.input_hash(a) != ht.hpu.input_hash(a.t())


def test_a_collective_during_capture_raises_unless_lazy_collectives(hpu: Any) -> None:
    from hpusim.hpu_graphs import COLLECTIVE_ERROR

    hpu("lazy")
    import habana_frameworks.torch as ht
    import torch.distributed as dist

    store = dist.HashStore()
    dist.init_process_group("hccl", store=store, rank=0, world_size=1)
    try:
        t = torch.ones(2, device="hpu")
        g = ht.hpu.HPUGraph()
        g.capture_begin()
        with pytest.raises(RuntimeError, match=COLLECTIVE_ERROR):
            dist.all_reduce(t)
        g._abort_capture()
    finally:
        dist.destroy_process_group()


def test_metrics_order_names_and_rank(
    hpu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hpusim.metrics import EventDispatcher, EventId, metrics_dump

    hpu("lazy", PT_HPU_METRICS_GC_DETAILS="1")
    order: list[str] = []
    bus = EventDispatcher.instance()
    handles = [
        bus.subscribe(e, lambda ts, p, e=e: order.append(e.name))
        for e in (EventId.CACHE_MISS, EventId.GRAPH_COMPILATION)
    ]
    try:
        (torch.ones(2, device="hpu") + 1).cpu()
    finally:
        for h in handles:
            bus.unsubscribe(h)
    assert order == ["CACHE_MISS", "GRAPH_COMPILATION"]
    gc = dict(torch.hpu.metric_global("graph_compilation").stats())
    assert gc["recipe"][0][0] == ".graph_dumps/HabanaFusedOpLazy_0"
    monkeypatch.setenv("RANK", "3")
    metrics_dump(str(tmp_path / "m.json"))
    assert json.loads((tmp_path / "m-rank3.json").read_text())[0]["triggered_by"] == "user"


def test_record_marks_a_failed_script_as_failed(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text('import torch\ntorch.ones(2, device="hpu")\nraise ValueError("boom")\n')
    env = dict(os.environ, HABANA_LOGS=str(tmp_path / "logs"))
    run = tmp_path / "run"
    out = subprocess.run(
        [
            sys.executable, "-c", "from hpuprof.cli.main import run; run()", "record",
            "--emulate", "-o", str(run), "--", "python", str(script),
        ],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 1
    # issue 13: run.json says how it failed -- the exception's type, and the exit code
    assert f"run written to {run} (exception: ValueError: boom)" in out.stdout
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["end_state"] == "exception" and manifest["status"] == "error: ValueError"
    assert manifest["ends"]["0"]["exit_code"] == 1
