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

NIC_DUMP = textwrap.dedent(
    """
    ledger = hpusim.state.RT.ledger
    nic = [e - s for s, e, g in zip(ledger.book._starts, ledger.book._ends, ledger.book._engines) if g == ENGINE_NIC]
    with open(out, "w") as f:
        json.dump({"count": len(nic), "ns": sum(nic)}, f)
    """
)
"""The end of each script: its modeled NIC ops (count, total ns) written to `out`."""

SCRIPT = (
    textwrap.dedent(
        """
    import contextlib, json, sys
    import torch
    import habana_frameworks.torch.core as htcore
    import hpusim.state
    from hpusim.device_model import ENGINE_NIC
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    cap, hook, micro, use_no_sync, out = sys.argv[1:6]
    micro, use_no_sync = int(micro), use_no_sync == "1"
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).to("hpu")
    ddp = DDP(model, bucket_cap_mb=int(cap)) if cap else DDP(model)
    if hook:
        ddp.register_comm_hook(None, getattr(default_hooks, hook))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for step in range(4):
        for i in range(micro):  # micro-batches, all but the last under no_sync if asked
            last = i == micro - 1
            with contextlib.nullcontext() if last or not use_no_sync else ddp.no_sync():
                loss = ddp(torch.randn(64, 1024).to("hpu")).pow(2).mean()
                loss.backward()
        htcore.mark_step()
        opt.step()
        opt.zero_grad()
        htcore.mark_step()
    """
    )
    + NIC_DUMP
)


def _predict(
    run_predict: Callable[..., tuple[int, str, str]],
    tmp_path: Path,
    cap: str,
    hook: str,
    micro: int = 1,
    no_sync: bool = False,
) -> tuple[dict[str, int], list[str]]:
    """The script's modeled NIC ops on 8 cards, and the prediction's assumptions."""
    script = tmp_path / "ddp_train.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"nic-{cap}-{hook}-{micro}-{no_sync:d}.json"
    args = (cap, hook, str(micro), f"{no_sync:d}", str(out))
    code, stdout, err = run_predict(str(script), *args, options=("--cards", "8"))
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


EXPLICIT = (
    textwrap.dedent(
        """
    import json, sys
    import torch
    import torch.distributed as dist
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.distributed.hccl  # noqa: F401
    import hpusim.state
    from hpusim.device_model import ENGINE_NIC

    store, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("hccl", init_method=f"file://{store}", rank=0, world_size=1)
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).to("hpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(4):
        loss = model(torch.randn(64, 1024).to("hpu")).pow(2).mean()
        loss.backward()
        grads = [p.grad for p in model.parameters()]
        flat = torch.cat([g.reshape(-1) for g in grads]).to(torch.bfloat16)  # one bf16 buffer
        dist.all_reduce(flat)
        htcore.mark_step()
        opt.step()
        opt.zero_grad()
        htcore.mark_step()
    dist.destroy_process_group()
    """
    )
    + NIC_DUMP
)


def test_an_explicit_bf16_all_reduce_is_the_collective_modeled_over_the_cards(
    tmp_path: Path, run_predict: Callable[..., tuple[int, str, str]]
) -> None:
    """A script that all-reduces one bf16 buffer of its gradients itself: that all-reduce, over
    `--cards` cards (its process group has one process), and no DDP all-reduce besides."""
    script = tmp_path / "explicit.py"
    script.write_text(EXPLICIT)
    out = tmp_path / "nic.json"
    store = tmp_path / "store"
    code, stdout, err = run_predict(str(script), str(store), str(out), options=("--cards", "8"))
    assert code == 0, err
    nic = json.loads(out.read_text())
    said = json.loads(stdout)["assumptions"]
    assert nic["count"] == 4, nic  # one per step, none added
    # 16 MB over 8 cards' links: 160 us each in the Gaudi 2 model (one card: a latency only)
    assert nic["ns"] / 4 >= 100_000, nic
    assert any("4 allreduce of bfloat16 (16 MB each)" in a for a in said), said
    assert any("modeled over 8 cards" in a and "no DDP" in a for a in said), said


def test_gradient_accumulation_all_reduces_every_backward_outside_no_sync(
    tmp_path: Path, run_predict: Callable[..., tuple[int, str, str]]
) -> None:
    """DDP synchronizes every backward of a forward run outside `no_sync`: 4 micro-batches
    per optimizer step all-reduce 4 times without it and once with it (the ledger all-reduced
    once per optimizer step either way)."""
    nic = {
        (micro, no_sync): _predict(run_predict, tmp_path, "", "", micro, no_sync)[0]
        for micro, no_sync in ((1, False), (4, False), (4, True))
    }
    once = nic[1, False]
    assert once["count"] > 0
    assert nic[4, True]["count"] == once["count"], nic
    assert nic[4, False]["count"] == 4 * once["count"], nic
    assert nic[4, False]["ns"] == pytest.approx(4 * once["ns"], rel=0.05), nic
