"""`habana_frameworks.torch.utils.experimental`: data_dynamicity, const_shape_dataloader,
detect_recompilation_auto_model output formats."""

from __future__ import annotations

import re
from typing import Any

import pytest

torch = pytest.importorskip("torch")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _loader(n: int, bs: int) -> Any:
    from torch.utils.data import DataLoader, TensorDataset

    return DataLoader(TensorDataset(torch.randn(n, 3), torch.arange(n)), batch_size=bs)


def test_data_dynamicity_counts_shapes_and_prints_the_verdict(hpu: Any, capsys: Any) -> None:
    hpu("lazy")
    from habana_frameworks.torch.utils.experimental import data_dynamicity

    hist = data_dynamicity(_loader(10, 4))  # 4, 4, 2: the drop_last problem
    assert hist == {((4, 3), (4,)): 2, ((2, 3), (2,)): 1}
    raw = capsys.readouterr().out
    assert "\033[96m" in raw and "\033[91m" in raw
    out = ANSI.sub("", raw)
    lines = out.splitlines()
    assert lines[0] == "=" * 120
    assert lines[1].startswith("| Shape") and "| Count" in lines[1] and len(lines[1]) == 120
    rows = [ln for ln in lines if ln.startswith("| ((")]
    assert rows[0].split("|")[2].strip() == "2"  # sorted by count, descending
    assert "Number of unique shapes:  2" in lines
    assert lines[-1] == "There is a little dynamicity in input data shapes"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1, "There is no dynamicity in input data shapes"),
        (6, "There is some dynamicity in input data shapes"),
        (21, "There is a lot of dynamicity in input data shapes"),
        (0, "Dataset looks empty"),
    ],
)
def test_verdicts(n: int, text: str) -> None:
    from hpusim.experimental import verdict

    assert verdict(n) == text


def test_non_tensor_items_are_hashed_with_the_bridge_message(hpu: Any, capsys: Any) -> None:
    hpu("lazy")
    from hpusim.experimental import data_dynamicity

    hist = data_dynamicity([{"text": torch.ones(2)}, {"text": torch.ones(3)}])
    assert len(hist) == 2
    out = capsys.readouterr().out
    assert "Found type<class 'str'>, not of types list, tuple, dict or tensor so using hash" in out


def test_const_shape_dataloader(hpu: Any) -> None:
    hpu("lazy")
    from habana_frameworks.torch.utils.experimental import const_shape_dataloader

    dl = const_shape_dataloader(_loader(10, 4), 5)
    shapes = [tuple(b[0].shape) for b in dl]
    assert shapes == [(4, 3), (4, 3)]  # no shape reaches 5: the most common one


def test_detect_recompilation_auto_model(hpu: Any, tmp_path: Any, capsys: Any) -> None:
    hpu("lazy")
    from habana_frameworks.torch.utils.experimental import detect_recompilation_auto_model

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()).to("hpu")
    csv = str(tmp_path / "out")
    detect_recompilation_auto_model(model, waittime=0, csv_out=csv)
    for b in (4, 4, 2):
        model(torch.randn(b, 3, device="hpu"))
    logs = model.raw_logs()
    assert logs[0].startswith(
        "[DETECT_RECOMPILE_AUTO] Registering hooks for Net of type "
        "<class 'torch.nn.modules.container.Sequential'> probably defined here <module"
    )
    assert logs[1].startswith("  [DETECT_RECOMPILE_AUTO] Registering hooks for Net/0 of type")
    calls = [ln for ln in logs if "num_graphs:" in ln]
    assert calls[2].startswith(
        "[DETECT_RECOMPILE_AUTO][Net]step:0 Found new input signature Found new output signature"
    )
    assert calls[2].endswith("Recompilation!")
    assert calls[5] == "[DETECT_RECOMPILE_AUTO][Net]step:1 num_graphs:0"  # a repeat: cache hits
    assert "step:2 Found new input signature" in calls[8]
    model.analyse_dynamicity()
    rows1 = (tmp_path / "out_1.csv").read_text().splitlines()
    assert rows1[0] == "Step,Recompiling modules,New in,New out,Class,Location,Comment"
    assert all(r.endswith("Recompiled due to new input shape") for r in rows1[1:])
    assert {r.split(",")[0] for r in rows1[1:]} == {"0", "2"}
    rows2 = (tmp_path / "out_2.csv").read_text().splitlines()
    assert rows2[0] == "Module name,Recompile count"
    assert set(rows2[1:]) == {"Net,2", "Net/0,2", "Net/1,2"}


def test_detect_recompilation_needs_lazy_mode(hpu: Any) -> None:
    hpu("eager")
    from hpusim.experimental import detect_recompilation_auto_model

    with pytest.raises(RuntimeError, match="lazy mode only"):
        detect_recompilation_auto_model(torch.nn.Linear(2, 2))
