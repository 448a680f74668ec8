"""`hpuprof predict --cards N` models the gradient all-reduce the script's DDP issues: its
`bucket_cap_mb` sets the buckets, a bf16 compression hook halves the bytes, and the
prediction's assumptions say what was modeled."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    import habana_frameworks.torch.core as htcore
    import hpusim.state
    from hpusim.device_model import ENGINE_NIC
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    cap, hook, out = sys.argv[1], sys.argv[2], sys.argv[3]
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).to("hpu")
    ddp = DDP(model, bucket_cap_mb=int(cap)) if cap else DDP(model)
    if hook:
        ddp.register_comm_hook(None, getattr(default_hooks, hook))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for step in range(4):
        loss = ddp(torch.randn(64, 1024).to("hpu")).pow(2).mean()
        loss.backward()
        htcore.mark_step()
        opt.step()
        opt.zero_grad()
        htcore.mark_step()
    ledger = hpusim.state.RT.ledger
    nic = [e - s for s, e, g in zip(ledger._starts, ledger._ends, ledger._engines) if g == ENGINE_NIC]
    with open(out, "w") as f:
        json.dump({"count": len(nic), "ns": sum(nic)}, f)
    """
)


def _predict(
    run_predict: Callable[..., tuple[int, str, str]], tmp_path: Path, cap: str, hook: str
) -> tuple[dict[str, int], list[str]]:
    script = tmp_path / "ddp_train.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"nic-{cap}-{hook}.json"
    code, stdout, err = run_predict(str(script), cap, hook, str(out), options=("--cards", "8"))
    assert code == 0, err
    nic: dict[str, int] = json.loads(out.read_text())
    return nic, json.loads(stdout)["assumptions"]


def test_ddp_bucket_size_and_bf16_hook_are_modeled_as_the_script_sets_them(
    tmp_path: Path, run_predict: Callable[..., tuple[int, str, str]]
) -> None:
    default, said = _predict(run_predict, tmp_path, "", "")
    assert any("the script's DDP buckets of 25 MB" in a for a in said), said
    # 8 x 4 MB of fp32 weight gradients (and biases) per step: 1 MB first bucket, then 25 MB
    small, said = _predict(run_predict, tmp_path, "1", "")
    assert any("DDP buckets of 1 MB" in a for a in said), said
    assert small["count"] >= 2 * default["count"] > 0, (small, default)
    half, said = _predict(run_predict, tmp_path, "", "bf16_compress_hook")
    assert any("2-byte elements (bf16_compress_hook)" in a for a in said), said
    assert half["count"] == default["count"]
    assert 0.4 * default["ns"] <= half["ns"] <= 0.6 * default["ns"], (half, default)
