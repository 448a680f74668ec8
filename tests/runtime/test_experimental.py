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
    # the bridge's Table: columns 14 and 5 wide at most -> int(14/19*120)+1, int(5/19*120)+1
    assert lines[0] == "=" * (89 + 32 + 3)
    assert lines[1] == "|Shape" + " " * 84 + "|Count" + " " * 27 + "|"
    assert lines[2] == "=" * 124 and lines[4] == "-" * 124
    rows = [ln for ln in lines if ln.startswith("|((")]
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
    assert calls[5] == "[DETECT_RECOMPILE_AUTO][Net]step:1 num_graphs:0 "  # a repeat: cache hits
    assert "step:2 Found new input signature" in calls[8]
    model.analyse_dynamicity()
    rows1 = (tmp_path / "out_1.csv").read_text().splitlines()
    assert rows1[0] == "Step,Recompiling modules,New in,New out,Class,Location,Comment"
    assert all(r.endswith("Recompiled due to new input shape") for r in rows1[1:])
    linear = next(r.split(",") for r in rows1 if r.split(",")[1] == "Net/0")
    assert linear[2:5] == ["True", "True", "torch.nn.modules.linear.Linear"]
    assert linear[5] == torch.nn.modules.linear.__file__  # the file, as the bridge parses it
    assert {r.split(",")[0] for r in rows1[1:]} == {"0", "2"}
    rows2 = (tmp_path / "out_2.csv").read_text().splitlines()
    assert rows2[0] == "Module name,Recompile count"
    assert set(rows2[1:]) == {"Net,2", "Net/0,2", "Net/1,2"}


def test_detect_recompilation_needs_lazy_mode(hpu: Any) -> None:
    hpu("eager")
    from hpusim.experimental import detect_recompilation_auto_model

    with pytest.raises(RuntimeError, match="lazy mode only"):
        detect_recompilation_auto_model(torch.nn.Linear(2, 2))


def test_recompilation_comments_follow_the_bridges_module_tree(tmp_path: Any) -> None:
    """detect_recompilation.py:246-258 + `_process_tree`: a module that recompiled on an input
    seen before is the dynamic one unless its last child was; the others get "Could be due to
    dynamic child". Table 2 counts every recompilation."""
    from hpusim.experimental import analyse_dynamicity

    tag = "[DETECT_RECOMPILE_AUTO]"
    reg = " of type <class 'm.A'> probably defined here <module 'm' from '/x/m.py'>"
    logs = [
        f"{tag} Registering hooks for Net{reg}",
        f"  {tag} Registering hooks for Net/a{reg}",
        f"  {tag} Registering hooks for Net/b{reg}",
        f"  {tag}[Net/a] Found new input signature Found new output signature num_graphs:1 "
        "Recompilation!",
        f"  {tag}[Net/b] Found new input signature Found new output signature num_graphs:1 "
        "Recompilation!",
        f"{tag}[Net]step:0 Found new input signature Found new output signature num_graphs:2 "
        "Recompilation!",
        f"  {tag}[Net/a] num_graphs:0 ",
        f"  {tag}[Net/b] Found new output signature num_graphs:1 Recompilation!",
        f"{tag}[Net]step:1 num_graphs:1 Recompilation!",
    ]
    rows1, rows2 = analyse_dynamicity(None, logs, str(tmp_path / "o"))
    assert [r[:2] + r[4:] for r in rows1 if r[0] == 1] == [
        [1, "Net/b", "m.A", "/x/m.py",
         "Already processed input shape still recompiled and has new output shape. Maybe dyn ops"],
        [1, "Net", "m.A", "/x/m.py",
         "Already processed input shape still recompiled. Maybe dyn ops. Could be due to dynamic "
         "child"],
    ]  # fmt: skip
    assert rows2 == [["Net/b", 2], ["Net", 2], ["Net/a", 1]]
    csv = (tmp_path / "o_1.csv").read_text().splitlines()
    assert csv[-1] == (
        "1,Net,False,False,m.A,/x/m.py,Already processed input shape still recompiled. Maybe dyn "
        "ops. Could be due to dynamic child"
    )
