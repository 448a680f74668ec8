"""`hpuprof record --emulate --cards N`: N emulated cards, one process each, one run directory,
collectives modeled on each card's NIC lane and matched across ranks by the analysis."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.multirank.cards import (
    SCRIPTS,
    analyze_json,
    cards,
    cli_env,
    collectives_in_their_steps,
    hpuprof_cli,
    launch_latency_ns,
    record,
)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = SCRIPTS / "data_parallel_train.py"

pytestmark = [pytest.mark.slow, pytest.mark.torch]

SLOW_S = 1.5
"""Extra host time of the slow card before each step (seconds)."""


def _distributed_report(tmp_path: Path, run: Path) -> dict[str, Any]:
    doc = analyze_json(tmp_path, run, "distributed")
    assert not doc["distributed"]["failed"]
    return doc


def _collectives_inside_their_steps(run: Path) -> None:
    """Every card's collectives belong to the step that issued them (`collectives_in_their_steps`;
    they were seconds after the last step when the NIC lane used the measured clock and the
    steps the projected one), and the cards' step ends meet (their clocks meet at the first
    collective)."""
    import hpuprof

    events = hpuprof.load(run).events
    run_cards = cards(events)
    collectives_in_their_steps(run_cards, launch_latency_ns(run))
    ends = [max(hi for _, hi in c.steps.values()) for c in run_cards]
    assert max(ends) - min(ends) < 0.5 * (max(ends) - int(events["ts_ns"].min())), ends


def test_three_cards_with_a_slow_host_name_the_straggler(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    args = ["--steps", "4", "--slow-rank", "2", "--slow-s", str(SLOW_S)]
    out, stdout = record(tmp_path, 3, SCRIPT, *args)
    for r in range(3):  # every card ran every step
        assert f"rank {r} step 3 loss" in stdout
    doc = _distributed_report(tmp_path, out)
    dist = doc["distributed"]
    assert not dist["failed"]
    # one bucket all-reduce per step, on each card's NIC lane, matched by process group + Seq
    skews = dist["collective_skew"]
    assert [(c["collective"], c["step"], c["ranks"]) for c in skews] == [
        ("allreduce", step, 3) for step in range(4)
    ], skews
    # rank 2 sleeps SLOW_S on its host before every step; on a loaded 2-core machine another
    # card can be slowed as much once, so the straggler is asserted the way the analysis names
    # it: the rank last most often, and the skew where it is last. The first collective is
    # where the cards' projected clocks meet (hpusim.distributed): its skew says nothing
    late = [c for c in skews if c["last_rank"] == 2 and c["step"] > 0]
    assert len(late) >= 2, skews
    assert all(c["skew_ns"] >= 0.6 * SLOW_S * 1e9 for c in late), late
    assert dist["skew_by_rank"][0]["rank"] == 2, dist["skew_by_rank"]
    overlap = {r["rank"]: r for r in dist["comm_comp_overlap"]}
    assert sorted(overlap) == [0, 1, 2]
    assert all(r["comm_ns"] > 0 for r in overlap.values())  # collectives on the device clock
    # the early cards wait inside their collectives for rank 2: their waiting is rank 2's
    waited = {r["rank"]: r["waited_ns"] for r in dist["skew_by_rank"]}
    assert waited[2] < min(waited[0], waited[1]), waited
    assert {r["category"] for r in dist["idle_breakdown"]} <= {"host_wait", "kernel_wait", "other"}
    assert {r["rank"] for r in dist["queue_length"]} == {0, 1, 2}
    assert dist["critical_path"] and all(r["length_ns"] > 0 for r in dist["critical_path"])
    found = [f for f in doc["findings"] if f["metric"] == "last_arrival_pct"]
    assert found and found[0]["evidence"]["rank"] == 2, found
    _collectives_inside_their_steps(out)


def test_ddp_and_fsdp_on_two_cards_train_like_explicit_all_reduces_without_host_copies(
    tmp_path: Path,
) -> None:
    """DistributedDataParallel, FSDP2 and FSDP1 on emulated cards: DDP's buckets are device
    tensors, all-reduced by hccl on the NIC lane; FSDP all-gathers and reduce-scatters there;
    every variant trains as explicit gradient all-reduces do; the parameters FSDP frees after
    a forward leave the emulated allocator."""
    pytest.importorskip("torch")
    import hpuprof

    out, stdout = record(tmp_path, 2, SCRIPTS / "ddp_variants.py")
    diffs = {
        (int(m[1]), m[2]): float(m[3])
        for m in re.finditer(r"rank (\d) (\w+) max_abs_diff ([-+.e0-9]+)", stdout)
    }
    variants = ("plain", "gradient_as_bucket_view", "find_unused_parameters", "static_graph")
    variants += ("allreduce_hook", "fp16_compress_hook", "no_sync")
    variants += ("fully_shard", "FullyShardedDataParallel")
    assert sorted(diffs) == sorted((r, v) for r in range(2) for v in variants), stdout
    for (rank, variant), diff in diffs.items():  # fp16 compression rounds the gradients
        assert diff <= (1e-3 if variant == "fp16_compress_hook" else 1e-6), (rank, variant, diff)
    # FSDP frees a layer's unsharded parameters after its forward by resizing their storage to
    # 0: torch.hpu.memory_allocated() drops by their bytes, as the bridge's allocator reports
    freed = {
        (int(m[1]), m[2]): (int(m[3]), int(m[4]))
        for m in re.finditer(r"rank (\d) (\w+) freed_after_forward (-?\d+) unsharded (\d+)", stdout)
    }
    assert sorted(freed) == sorted(
        (r, v) for r in range(2) for v in ("fully_shard", "FullyShardedDataParallel")
    ), stdout
    for key, (dropped, unsharded) in freed.items():
        assert dropped == unsharded > 0, (key, dropped, unsharded)

    events = hpuprof.load(out).events
    # DDP's buckets, FSDP's all-gathers and reduce-scatters and the references' per-gradient
    # all-reduces each belong to the step that issued them, and what reads them waits for them
    collectives_in_their_steps(cards(events), launch_latency_ns(out))
    names = events["name"].astype(str)
    for rank in range(2):
        mine = events[events["rank"] == rank]
        device = mine[mine["is_device"]]
        copies = device[names[device.index].str.startswith("Memcpy HtoD")]
        hosts = mine[~mine["is_device"] & mine["correlation"].isin(copies["correlation"])]
        # the script's own .to("hpu") and the used-parameter map (int, copied each step as on
        # a Gaudi): no gradient or bucket crosses the host
        crossings = set(
            zip(hosts["name"].astype(str), hosts["input_types"].astype(str), strict=True)
        )
        assert crossings == {("aten::_to_copy", '["float"]'), ("aten::copy_", '["int"]')}
        collectives = names[device.index]
        # 7 DDP variants x 3 steps: one bucket each, plus 4 explicit all-reduces per step of
        # every reference (9) and one used-parameter map per find_unused_parameters step
        assert (collectives == "hccl_allreduce").sum() == 7 * 3 + 9 * 3 * 4 + 3
        # FSDP2 and FSDP1: the parameters all-gathered for each forward, the gradients
        # reduce-scattered; FSDP2's full_tensor() is a functional all-gather per parameter
        assert (collectives == "hccl_allgather_base").sum() >= 2 * 3 + 4
        nic = names[device.index[device["engine"].astype(str) == "NIC"]]
        assert nic.str.startswith("hccl_").all(), nic.value_counts()
        assert (collectives == "hccl_reduce_scatter_base").sum() >= 2 * 3
    skews = _distributed_report(tmp_path, out)["distributed"]["collective_skew"]
    assert len(skews) >= 9 * 3 and all(c["ranks"] == 2 for c in skews), skews


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_lightning_hpu_data_parallel_strategies_on_two_cards(tmp_path: Path, strategy: str) -> None:
    """lightning-habana's HPUDDPStrategy and HPUFSDPStrategy (FSDP1, bf16-mixed) on two emulated
    cards: each card trains on its own shard of the data, the whole weights end equal on both,
    and the collectives are on each card's NIC lane."""
    if importlib.util.find_spec("lightning_habana") is None:  # it imports only while emulating
        pytest.skip("lightning-habana is not installed")
    import hpuprof

    script = REPO / "tests" / "runtime" / "clients" / "lightning_data_parallel.py"
    out, stdout = record(tmp_path, 2, script, strategy)
    sums = dict(re.findall(r"rank (\d) weight_sum ([-+.e0-9]+)", stdout))
    assert sorted(sums) == ["0", "1"] and sums["0"] == sums["1"], stdout
    events = hpuprof.load(out).events
    device = events[events["is_device"]]
    # DDP: one bucket all-reduce per step (2 steps per card); FSDP: an all-gather of the flat
    # parameter per forward and backward, a reduce-scatter of its gradient per step
    wanted = {
        "ddp": ["hccl_allreduce"],
        "fsdp": ["hccl_allgather_base", "hccl_reduce_scatter_base"],
    }
    for rank in range(2):
        names = device[device["rank"] == rank]["name"].astype(str)
        for name in wanted[strategy]:
            assert (names == name).sum() >= 2, names.value_counts().head(20)


def test_two_cards_are_counted_per_rank_in_every_figure(tmp_path: Path) -> None:
    """A 2-card run of 8 steps: 8 steps per rank, never 16; counts added over the ranks say so;
    the op table has its per-rank split; a comparison is over "8 steps x 2 ranks"."""
    pytest.importorskip("torch")
    out, _ = record(tmp_path, 2, SCRIPT, "--steps", "8")
    text = subprocess.run(
        [*hpuprof_cli(), "analyze", str(out)],
        env=cli_env() | {"COLUMNS": "200"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr[-3000:]
    _collectives_inside_their_steps(out)
    assert "Steps per rank: 8" in text.stdout and "Compilations (total over 2 ranks)" in text.stdout
    report = tmp_path / "ops.json"
    cmd = [*hpuprof_cli(), "analyze", str(out), "--report", "ops", "-f", "json", "-o", str(report)]
    assert subprocess.run(cmd, env=cli_env(), capture_output=True, timeout=300).returncode == 0
    ops = json.loads(report.read_text())["ops"]
    assert {r["rank"] for r in ops["by_rank"]} == {0, 1}
    summed = {o["name"]: o["calls"] for o in ops["ops"]}
    for name, calls in summed.items():
        assert sum(r["calls"] for r in ops["by_rank"] if r["name"] == name) == calls, name
    diff = tmp_path / "diff.json"
    cmd = [*hpuprof_cli(), "diff", str(out), str(out), "-f", "json", "-o", str(diff)]
    done = subprocess.run(cmd, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(diff.read_text())
    cmp = doc["compare"]
    assert (cmp["a_steps"], cmp["a_ranks"], cmp["a_samples"]) == (8, 2, 16)
    assert cmp["a_sampled"] == "8 steps x 2 ranks"
    assert doc["findings"] == []  # a run against itself: nothing changed, same device
