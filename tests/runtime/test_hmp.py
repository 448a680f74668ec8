"""Legacy HMP: `hmp.convert` O1/O2, list files, `disable_casts`, verbose lines, cast events."""

from __future__ import annotations

from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")
BF16 = torch.bfloat16
FP32 = torch.float32


def test_o1_lists_and_multi_input_rule(hpu: Any, capsys: Any) -> None:
    from hpusim.sink import get_sink

    hpu("lazy")
    from habana_frameworks.torch.hpex import hmp

    hmp.convert(opt_level="O1", isVerbose=True)
    x, w = torch.randn(4, 8, device="hpu"), torch.randn(8, 8, device="hpu")
    y = torch.mm(x, w)
    assert y.dtype == BF16  # BF16 list
    assert torch.softmax(y, -1).dtype == FP32  # FP32 list
    assert torch.relu(y).dtype == BF16  # neither list: dtype of the first input
    assert (y + x).dtype == FP32  # multi-input: widest input
    z = y.clone()
    z.add_(x)  # in-place: the other input cast to the first's dtype
    assert z.dtype == BF16
    out = capsys.readouterr().out
    assert "HMP: opt_level=O1" in out
    assert "HMP: mm: casting input from torch.float32 to torch.bfloat16" in out
    casts = runtime_events(get_sink().drain(), "cast")
    assert {c["hpuprof.source"] for c in casts} == {"hmp"}
    assert {c["hpuprof.policy"] for c in casts} >= {"bf16_list", "fp32_list", "widest_input"}


def test_o2_runs_other_float_ops_in_fp32_and_disable_casts(hpu: Any) -> None:
    hpu("lazy")
    from habana_frameworks.torch.hpex import hmp

    hmp.convert(opt_level="O2")
    x = torch.randn(4, 8, device="hpu")
    y = torch.mm(x, x.t())
    assert y.dtype == BF16
    assert torch.relu(y).dtype == FP32
    with hmp.disable_casts():
        assert torch.mm(x, x.t()).dtype == FP32
    assert torch.mm(x, x.t()).dtype == BF16


def test_list_files_replace_defaults(hpu: Any, tmp_path: Any) -> None:
    hpu("lazy")
    from habana_frameworks.torch.hpex import hmp

    bf16 = tmp_path / "ops_bf16.txt"
    bf16.write_text("linear relu\n")
    fp32 = tmp_path / "ops_fp32.txt"
    fp32.write_text("mm\n")
    hmp.convert(opt_level="O1", bf16_file_path=str(bf16), fp32_file_path=str(fp32))
    x = torch.randn(4, 8, device="hpu")
    assert torch.nn.functional.linear(x, x).dtype == BF16
    assert torch.mm(x.bfloat16(), x.t().bfloat16()).dtype == FP32
    with pytest.raises(ValueError, match="opt_level"):
        hmp.convert(opt_level="O3")


def test_hmp_is_off_after_disable(hpu: Any) -> None:
    import hpusim

    hpu("lazy")
    from habana_frameworks.torch.hpex import hmp

    hmp.convert()
    assert hmp.is_enabled()
    hpusim.disable()
    assert not hmp.is_enabled()
    assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == FP32
