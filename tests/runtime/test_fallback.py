"""CPU fallback (op table), PT_HPU_PLACE_ON_CPU, bridge log lines, dtype rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")


def test_missing_op_falls_back_and_is_counted(hpu: Any) -> None:
    hpu()
    from hpusim.metrics import metric_global
    from hpusim.sink import get_sink

    x = torch.rand(5, device="hpu") + 1
    get_sink().drain()
    for _ in range(3):
        y = torch.digamma(x)
    assert y.device.type == "hpu"
    assert torch.equal(y.cpu(), torch.digamma(x.cpu()))
    stats = dict(metric_global("cpu_fallback").stats())
    assert stats == {"TotalNumber": 3, "FallbackOps": {"aten::digamma": 3}}
    batch = get_sink().drain()
    events = runtime_events(batch, "fallback")
    assert len(events) == 3 and events[0]["hpuprof.op"] == "aten::digamma"
    copies = [batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == 2]
    assert copies.count("Memcpy DtoH (cpu fallback)") == 3  # modeled copies to host and back
    assert copies.count("Memcpy HtoD (cpu fallback)") == 3


def test_supported_ops_do_not_fall_back(hpu: Any) -> None:
    hpu()
    from hpusim.metrics import metric_global

    x = torch.randn(4, 4, device="hpu")
    (x @ x).relu().sum().item()
    assert dict(metric_global("cpu_fallback").stats())["TotalNumber"] == 0


def test_place_on_cpu_allow_list(hpu: Any) -> None:
    hpu(PT_HPU_PLACE_ON_CPU="aten::digamma")
    x = torch.rand(3, device="hpu")
    torch.digamma(x)  # allowed
    with pytest.raises(RuntimeError, match=r"aten::i0 is not yet supported on HPU\."):
        torch.i0(x)


def test_place_on_cpu_matches_the_exact_operator_name(hpu: Any) -> None:
    # the bridge compares c10::toString(operator_name()) verbatim: no bare names, no trimming
    # (i0: no HPU kernel in 1.19; lgamma runs on the device through lgamma.out)
    hpu(PT_HPU_PLACE_ON_CPU="digamma, aten::i0")
    x = torch.rand(3, device="hpu")
    for op in (torch.digamma, torch.i0):
        with pytest.raises(RuntimeError, match="is not yet supported on HPU"):
            op(x)


def test_place_on_cpu_none_forbids_every_fallback(hpu: Any) -> None:
    hpu(PT_HPU_PLACE_ON_CPU="none")
    with pytest.raises(RuntimeError, match="is not yet supported on HPU"):
        torch.digamma(torch.rand(3, device="hpu"))


def test_place_on_cpu_is_read_at_the_first_fallback_not_at_import(
    hpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bridge's HpuFallbackHelper reads PT_HPU_PLACE_ON_CPU when first used and keeps it:
    its own test suite sets `none` in pytest_configure, after importing habana_frameworks
    (the emulator read it at enable: fallbacks the bridge refuses went through in a run of one
    process, and were refused under xdist, whose workers start with the variable set)."""
    hpu()
    monkeypatch.setenv("PT_HPU_PLACE_ON_CPU", "none")
    x = torch.rand(3, device="hpu")
    with pytest.raises(RuntimeError, match=r"aten::digamma is not yet supported on HPU\."):
        torch.digamma(x)
    monkeypatch.delenv("PT_HPU_PLACE_ON_CPU")  # read once: still refused
    with pytest.raises(RuntimeError, match="is not yet supported on HPU"):
        torch.digamma(x)


def test_fallback_log_lines_and_exit_summary(hpu: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import hpusim

    hpu(ENABLE_CONSOLE="true", LOG_LEVEL_PT_FALLBACK="1")
    x = torch.rand(3, device="hpu")
    torch.digamma(x)
    torch.digamma(x)
    torch.i0(x)
    hpusim.disable()
    out = capsys.readouterr().out
    assert "CPU fallback digamma : self=HPUFloatType" in out
    assert "CPU Fallback stats:\n2\taten::digamma\n1\taten::i0" in out


def test_fallback_log_goes_to_habana_logs_without_console(hpu: Any, tmp_path: Path) -> None:
    hpu(LOG_LEVEL_PT_FALLBACK="1")
    torch.digamma(torch.rand(3, device="hpu"))
    log = (tmp_path / "habana_logs" / "pytorch_log.txt").read_text()
    assert "[PT_FALLBACK" in log and "CPU fallback digamma : self=HPUFloatType" in log


def test_dtype_rules_are_recorded_and_values_kept(hpu: Any) -> None:
    hpu()
    from hpusim.sink import get_sink

    d = torch.tensor([1.0, 2.0], dtype=torch.float64).to("hpu")
    i = torch.arange(4, device="hpu")
    assert d.dtype == torch.float64 and i.dtype == torch.int64  # computed in the real dtype
    rules = {e["hpuprof.rule"]: e for e in runtime_events(get_sink().drain(), "cast")}
    assert rules["fp64_as_fp32"]["hpuprof.dtype_to"] == "float32"
    assert rules["int64_as_int32"]["hpuprof.dtype_from"] == "int64"


def test_int64_support_flag_silences_the_int64_rule(hpu: Any) -> None:
    hpu(PT_ENABLE_INT64_SUPPORT="1")
    from hpusim.sink import get_sink

    torch.arange(4, device="hpu")
    assert not runtime_events(get_sink().drain(), "cast")


def test_unsupported_dtype_of_a_floating_op_is_an_fp32_recompute_not_a_fallback(hpu: Any) -> None:
    hpu()
    from hpusim.metrics import metric_global
    from hpusim.sink import get_sink

    x = torch.ones(3, 3, device="hpu", dtype=torch.float16)
    torch.tril(x)  # the op table has no FP16 for tril
    assert dict(metric_global("cpu_fallback").stats())["TotalNumber"] == 0
    casts = runtime_events(get_sink().drain(), "cast")
    assert any(
        c["hpuprof.rule"] == "unsupported_dtype" and c["hpuprof.op"] == "aten::tril" for c in casts
    )


def test_op_support_data_is_derived_from_the_shared_tables(tmp_path: Path) -> None:
    import json
    import runpy

    ref = Path(__file__).resolve().parents[2].parent / "shared" / "reference"
    if not (ref / "gaudi-op-support.csv").is_file():
        pytest.skip("../shared/reference is not present")
    script = (
        Path(__file__).resolve().parents[2] / "runtime" / "hpusim" / "data" / "make_op_support.py"
    )
    build = runpy.run_path(str(script))["build"]
    fresh = build(ref)
    shipped = json.loads((script.parent / "op_support.json").read_text())
    assert fresh == shipped
    assert "aten::digamma" in shipped["missing"] and "FP16" not in shipped["dtypes"]["tril"]


def test_common_training_ops_stay_on_the_device(hpu: Any) -> None:
    """Conv backward (the bridge's overrideable hook) and a bool-condition `where` are not
    fallbacks: only the op's data dtype decides."""
    hpu("lazy")
    from hpusim.metrics import metric_global

    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()
    ).to("hpu")
    net(torch.randn(2, 3, 8, 8).to("hpu")).sum().backward()
    m = torch.randn(4, 4, device="hpu")
    torch.where(m > 0, m, 0.0).sum().item()
    assert dict(metric_global("cpu_fallback").stats())["TotalNumber"] == 0
