"""DeepSpeed from PyPI (pyproject's `deepspeed` extra) on emulated Gaudi cards: `deepspeed.initialize`
and bf16 ZeRO-1/2/3 training steps under `hpuprof record --emulate --cards N`, with the
collectives each ZeRO stage issues on every card's NIC lane, matched across ranks; and
lightning-habana's `HPUDeepSpeedStrategy` (ZeRO-2) on 2 cards.

Skipped when DeepSpeed is not installed (`pip install -e .[deepspeed]`)."""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.multirank.cards import REPO, SCRIPTS, record
from tests.multirank.test_cards import _distributed_report

pytestmark = [pytest.mark.slow, pytest.mark.torch]

SCRIPT = SCRIPTS / "deepspeed_zero_train.py"
STEPS = 3


@pytest.fixture(autouse=True)
def _needs_deepspeed() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("deepspeed", reason="DeepSpeed is not installed (the deepspeed extra)")


def _weights(stdout: str) -> dict[int, float]:
    """`rank R weights W`: the whole weights' sum per rank after training (the cards share the
    output: one card's line can end where another's begins)."""
    found = re.findall(r"rank (\d+) weights (-?\d+\.\d{6})", stdout)
    return {int(r): float(w) for r, w in found}


def _nic_collectives(run: Path) -> dict[int, Counter[str]]:
    """The collectives on each rank's NIC lane (device ops), counted by name."""
    import hpuprof

    events = hpuprof.load(run).events
    nic = events[events["is_device"] & (events["engine"].astype(str) == "NIC")]
    return {
        int(rank): Counter(group["name"].astype(str).tolist())
        for rank, group in nic.groupby("rank", observed=True)
    }


def test_zero_1_bf16_step_on_one_card(tmp_path: Path) -> None:
    """The issue's first stop: `deepspeed.initialize` moved the model to the card (it failed
    with "Couldn't swap Linear.weight"), then bf16 ZeRO-1 steps train on the emulated HPU."""
    _, stdout = record(tmp_path, 1, SCRIPT, "--stage", "1", "--steps", str(STEPS))
    assert "accelerator: hpu" in stdout
    losses = [float(x) for x in re.findall(r"^rank 0 step \d+ loss (\S+)$", stdout, re.M)]
    assert len(losses) == STEPS and all(0 < loss < 10 for loss in losses), stdout[-2000:]


def test_zero_stages_on_two_cards_issue_their_collectives_and_agree(tmp_path: Path) -> None:
    """ZeRO-1 and 2 (DeepSpeed 0.19: gradients all-reduced in buckets, the updated partitions
    all-gathered) and ZeRO-3 (parameters all-gathered for forward and backward, gradients
    reduce-scattered) on 2 cards: each stage's collectives on both cards' NIC lanes, matched
    across ranks by the distributed analysis; the stages are one optimization, so the whole
    weights after the same steps agree across ranks and stages."""
    weights = {}
    for stage in (1, 2, 3):
        folder = tmp_path / f"zero{stage}"
        folder.mkdir()
        run, stdout = record(folder, 2, SCRIPT, "--stage", str(stage), "--steps", str(STEPS))
        per_rank = _weights(stdout)
        lines = [line for line in stdout.splitlines() if "rank " in line]
        assert set(per_rank) == {0, 1} and per_rank[0] == per_rank[1], lines
        weights[stage] = per_rank[0]
        nic = _nic_collectives(run)
        assert set(nic) == {0, 1} and nic[0] == nic[1], nic
        ops = nic[0]
        if stage < 3:
            assert ops["hccl_allgather_base"] == STEPS, ops  # the updated partitions
            assert ops["hccl_allreduce"] >= STEPS, ops  # the gradient buckets
            assert "hccl_reduce_scatter_base" not in ops, ops
        else:
            assert ops["hccl_reduce_scatter_base"] == STEPS, ops  # the gradients
            assert ops["hccl_allgather_base"] >= 2 * STEPS, ops  # forward and backward gathers
        dist = _distributed_report(folder, run)["distributed"]
        matched = Counter(c["collective"] for c in dist["collective_skew"] if c["ranks"] == 2)
        assert matched == Counter({name.removeprefix("hccl_"): n for name, n in ops.items()}), (
            matched,
            ops,
        )
    assert weights[1] == weights[2] == weights[3], weights


def test_zero_2_with_the_optimizer_offloaded_to_the_host(tmp_path: Path) -> None:
    """ZeRO-Offload (`offload_optimizer: cpu`, torch's AdamW: DeepSpeedCPUAdam would JIT-build
    C++) on 1 card trains to the weights the on-card optimizer reaches, but for rounding (the
    offloaded step works on fp32 copies of the gradients): 3 steps move the weights' sum from
    -1.29 to about -2.09, and the two runs agree within 0.01 (measured: 0.0013)."""
    weights = {}
    for offload in ((), ("--offload",)):
        folder = tmp_path / ("offload" if offload else "on-card")
        folder.mkdir()
        _, stdout = record(folder, 1, SCRIPT, "--stage", "2", "--steps", str(STEPS), *offload)
        weights[bool(offload)] = _weights(stdout)[0]
    assert weights[True] == pytest.approx(weights[False], abs=0.01), weights


def test_lightning_habana_deepspeed_strategy_zero_2_on_two_cards(tmp_path: Path) -> None:
    """lightning-habana's `HPUDeepSpeedStrategy(stage=2)` with its bf16 precision plugin, as its
    docs use them, on PyPI's DeepSpeed (its pin on Habana's fork waived) and 2 emulated cards:
    one epoch of 2 steps per card (64 samples, batches of 16, Lightning's DistributedSampler),
    after which the whole weights agree across cards; each card's NIC lane holds the same
    collectives: one all-gather of the updated partitions per step, gradient all-reduces."""
    if importlib.util.find_spec("lightning_habana") is None:
        pytest.skip("lightning-habana is not installed (the clients extra)")
    script = REPO / "tests" / "runtime" / "clients" / "lightning_deepspeed.py"
    run, stdout = record(tmp_path, 2, script, "2")
    per_rank = _weights(stdout)
    assert set(per_rank) == {0, 1} and per_rank[0] == per_rank[1], stdout[-2000:]
    nic = _nic_collectives(run)
    assert set(nic) == {0, 1} and nic[0] == nic[1], nic
    assert nic[0]["hccl_allgather_base"] == 2 and nic[0]["hccl_allreduce"] >= 2, nic
