"""Emulated multi-card runs for the tests (`hpuprof record --emulate --cards N`) and what the
tests read from their events without the analyses: each card's steps, its collectives with the
step that issued them, and its communication time (test helper)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).with_name("scripts")
COMPUTE_ENGINES = ("MME", "TPC")
"""The engines of compute ops (the analyses' COMPUTATION kernels on a Gaudi)."""


def hpuprof_cli() -> list[str]:
    return [sys.executable, "-c", "from hpuprof.cli.main import run; run()"]


def cli_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "runtime")])}
    env.pop("RANK", None)
    return env


def record(tmp_path: Path, cards: int, script: Path, *args: str) -> tuple[Path, str]:
    """`hpuprof record --emulate --cards N -- python script args`: (run directory, stdout)."""
    out = tmp_path / "run"
    cmd = [*hpuprof_cli(), "record", "--emulate", "--cards", str(cards), "-o", str(out), "--"]
    cmd += ["python", str(script), *args]
    done = subprocess.run(
        cmd, env=cli_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["ranks"] == list(range(cards)) and manifest["world_size"] == cards
    assert len(manifest["traces"]) == cards
    assert f"hpuprof: {cards} emulated cards written to {out}" in done.stdout
    return out, done.stdout


def analyze_json(tmp_path: Path, run: Path, reports: str) -> dict[str, Any]:
    """`hpuprof analyze RUN --report REPORTS -f json`, read back."""
    report = tmp_path / f"{reports.replace(',', '-')}.json"
    cmd = [*hpuprof_cli(), "analyze", str(run), "--report", reports, "-f", "json"]
    done = subprocess.run(
        [*cmd, "-o", str(report)], env=cli_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    doc: dict[str, Any] = json.loads(report.read_text())
    return doc


# --- intervals (the tests' own, not the analyses') --------------------------------------------


def union(starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    """The union of [start, end) intervals, as sorted disjoint intervals."""
    out: list[list[int]] = []
    for s, e in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The intersection of two unions."""
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def length(a: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in a)


# --- one card's events -------------------------------------------------------------------------


@dataclass(frozen=True)
class Card:
    """One card's events: its host steps (ProfilerStep#N spans, in order) and device ops.

    Args:
        steps: step number -> (start_ns, end_ns) of its ProfilerStep span on the host.
        host: the card's host rows; device: its device rows (`engine` says which engine).
    """

    rank: int
    steps: dict[int, tuple[int, int]]
    host: pd.DataFrame
    device: pd.DataFrame

    @property
    def nic(self) -> pd.DataFrame:
        return self.device[self.device["engine"].astype(str) == "NIC"]

    @property
    def compute(self) -> pd.DataFrame:
        return self.device[self.device["engine"].astype(str).isin(COMPUTE_ENGINES)]

    def step_at(self, ts_ns: int) -> int | None:
        """The step whose host span holds `ts_ns`, None when no step does."""
        return next((k for k, (lo, hi) in self.steps.items() if lo <= ts_ns <= hi), None)

    def issued_in(self, rows: pd.DataFrame) -> list[int | None]:
        """Per device row: the step of the host op that launched it (the host rows of its
        correlation, the earliest of them), None when no host row has its correlation."""
        first = self.host.groupby("correlation")["ts_ns"].min()
        out: list[int | None] = []
        for corr in rows["correlation"].tolist():
            out.append(self.step_at(int(first[corr])) if corr in first.index else None)
        return out


def cards(events: pd.DataFrame) -> list[Card]:
    """Each card of a loaded run (`hpuprof.load(run).events`)."""
    names = events["name"].astype(str)
    out = []
    for rank in sorted(int(r) for r in pd.unique(events["rank"])):
        mine = events[events["rank"].to_numpy() == rank]
        spans = mine[names[mine.index].str.startswith("ProfilerStep#") & ~mine["is_device"]]
        steps = {
            int(str(n).split("#")[1]): (int(t), int(t) + int(d))
            for n, t, d in zip(spans["name"], spans["ts_ns"], spans["dur_ns"], strict=True)
        }
        host = mine[~mine["is_device"].to_numpy(dtype=bool) & (mine["correlation"] >= 0)]
        out.append(Card(rank, dict(sorted(steps.items())), host, mine[mine["is_device"]]))
    return out


def intervals(rows: pd.DataFrame) -> list[tuple[int, int]]:
    ts = rows["ts_ns"].to_numpy(dtype=np.int64)
    return union(ts, ts + rows["dur_ns"].to_numpy(dtype=np.int64))


@dataclass(frozen=True)
class Comm:
    """One card's communication time from its NIC ops (ns).

    Args:
        comm_ns: the union of its NIC ops; overlap_ns: that union under compute (MME/TPC).
        in_steps_ns / overlapped_in_steps_ns: the same inside its host steps' spans.
    """

    comm_ns: int
    overlap_ns: int
    in_steps_ns: int
    overlapped_in_steps_ns: int


def comm_of(card: Card) -> Comm:
    comm, compute = intervals(card.nic), intervals(card.compute)
    steps = union(
        np.array([lo for lo, _ in card.steps.values()], dtype=np.int64),
        np.array([hi for _, hi in card.steps.values()], dtype=np.int64),
    )
    under = intersect(comm, compute)
    return Comm(
        length(comm), length(under), length(intersect(comm, steps)), length(intersect(under, steps))
    )


def launch_latency_ns(run: Path) -> int:
    """The launch latency of the run's device model (its profile's `launch_latency_ns`)."""
    from hpusim.device_model import load_profile

    manifest = json.loads((run / "run.json").read_text())
    return load_profile(str(manifest["device_profile"])).launch_latency_ns


def collectives_in_their_steps(run_cards: list[Card], latency_ns: int) -> dict[int, int]:
    """Every card's collectives belong to the step that issued them; returns, per rank, how
    far the collectives ran past the host span of their step at most (ns, <= 0: none did).

    - issued: the host op of the collective's correlation (`c10d::` op, its launch) lies in
      step k's ProfilerStep span, and the loaded `step` of the NIC op is k (a collective the
      host issued outside every step, after the last one, has no step either);
    - started: after its launch reached the device (host op end + `latency_ns`), inside step
      k's span; later only when the card's device was still busy then with work queued
      before it (the device runs behind the host: FSDP's copies wait for each all-gather,
      which waits for the last card), and then as that work ends;
    - ended: possibly after step k's host span (a lazy HCCL Work is complete when launched,
      `WorkLazy::isCompleted` is true and `wait()` only marks a step, gaudi-pytorch-bridge
      process_group_lazy_hccl.cpp:276-297: the host never waits for the NIC), but before the
      first compute launched in step k + 1 starts (the optimizer's update, which reads what
      the collectives reduced, waits for them on the device)."""
    overrun: dict[int, int] = {}
    for card in run_cards:
        nic = card.nic.sort_values("ts_ns")
        assert len(nic), card.rank
        issued = card.issued_in(nic)
        host = card.host
        launched = (host["ts_ns"] + host["dur_ns"]).groupby(host["correlation"]).max()
        compute = card.compute
        first_compute: dict[int, int] = {}
        for ts, step in zip(compute["ts_ns"].tolist(), card.issued_in(compute), strict=True):
            if step is not None:
                first_compute[step] = min(first_compute.get(step, ts), ts)
        device = card.device
        corr = device["correlation"].to_numpy()
        ends = (device["ts_ns"] + device["dur_ns"]).to_numpy()
        worst = -(1 << 62)
        for row, step in zip(nic.itertuples(), issued, strict=True):
            what = (card.rank, row.name, row.correlation, step)
            if step is None:  # issued outside every step (after the last one): so is its op
                assert row.step < 0 and row.correlation in launched.index, what
                continue
            assert row.step == step, what
            start, end = int(row.ts_ns), int(row.ts_ns + row.dur_ns)
            lo, hi = card.steps[step]
            ready = int(launched[row.correlation]) + latency_ns
            assert lo <= start and start >= ready, what
            if start > max(hi, ready):  # the card was busy with work queued before it
                assert start in ends[corr < row.correlation], what
            if step + 1 in first_compute:
                assert end <= first_compute[step + 1], (what, end - first_compute[step + 1])
            worst = max(worst, end - hi)
        overrun[card.rank] = worst
    return overrun
