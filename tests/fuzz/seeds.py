"""The seeds of a fuzz run: real torch.profiler traces (../shared), the real Synapse logger
excerpt (../shared), our sample traces and run directories, and the Perfetto and Parquet files
made from them."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from tests.fuzz.mutate import Seed

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
SHARED = REPO.parent / "shared" / "traces" / "kineto"
GAUDI = REPO / "tests" / "trace" / "data" / "gaudi_merged.json"
GAUDI_HW = REPO.parent / "shared" / "traces" / "gaudi" / "gaudi3-debug_hw_prof_accel0_001.csv"
SYNAPSE_LOG = REPO.parent / "shared" / "traces" / "gaudi" / "synapse-logger-example.json"


def collect(scratch: Path, *, max_json_bytes: int) -> list[Seed]:
    """Every seed whose (decompressed) JSON is at most `max_json_bytes`; writes the made ones
    (Parquet, the bait trace) under `scratch`."""
    scratch.mkdir(parents=True, exist_ok=True)
    seeds: list[Seed] = []
    json_files = sorted(SAMPLES.glob("*/traces/*.pt.trace.json"))
    json_files += [*sorted(SAMPLES.glob("*/*.pt.trace.json")), GAUDI]
    json_files += [SYNAPSE_LOG] if SYNAPSE_LOG.is_file() else []  # the Synapse logger reader
    for path in json_files:
        data = path.read_bytes()
        if len(data) <= max_json_bytes:
            seeds.append(Seed(f"sample/{path.name}", "json", path, data))
    if SHARED.is_dir():
        for path in sorted(SHARED.rglob("*.json.gz")):
            data = gzip.decompress(path.read_bytes())
            if len(data) > max_json_bytes:
                continue
            name = f"shared/{path.relative_to(SHARED)}"
            seeds.append(Seed(name, "json", path.with_suffix(""), data))
            seeds.append(Seed(name, "gzip", path, data))
    for path in sorted(SAMPLES.glob("*/perfetto/*.perfetto-trace")):
        seeds.append(Seed(f"sample/{path.name}", "perfetto", path, path.read_bytes()))
    for path in sorted(SAMPLES.glob("*/run.json")):
        seeds.append(Seed(f"sample/{path.parent.name}", "rundir", path.parent))
    seeds += _parquet_seeds(scratch)
    seeds += _gaudi_hardware_seeds(scratch)
    return seeds


def _gaudi_hardware_seeds(scratch: Path) -> list[Seed]:
    """The shared Gaudi 3 hardware-profiler CSV, and an .hltv holding it with Intel's node
    table as `views/trace_analyzer.json` (the layout of Intel's slicing_analyzer.py)."""
    import csv
    import json
    import zipfile

    if not GAUDI_HW.is_file():
        return []
    data = GAUDI_HW.read_bytes()
    table = GAUDI_HW.with_name(GAUDI_HW.stem + "_analyzed_nodes.csv")
    with open(table, newline="", encoding="utf-8") as handle:
        view = {"analyzer_metadata": list(csv.DictReader(handle))}
    hltv = scratch / "gaudi3.hltv"
    with zipfile.ZipFile(hltv, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("views/trace_analyzer.json", json.dumps(view))
        archive.writestr("prof-data/hw_prof_accel0.csv", data)
    return [
        Seed(f"shared/{GAUDI_HW.name}", "hwcsv", GAUDI_HW, data),
        Seed("made/gaudi3.hltv", "hltv", hltv, hltv.read_bytes()),
    ]


def _parquet_seeds(scratch: Path) -> list[Seed]:
    import hpuprof
    from hpuprof.trace.parquet import save_parquet

    made = []
    for path in (GAUDI, SAMPLES / "emulated_lazy" / "traces" / "gaudi_train-rank0.pt.trace.json"):
        if not path.is_file():
            continue
        target = scratch / f"{path.name}.parquet"
        save_parquet(hpuprof.load(path, cache=False), target)
        made.append(Seed(f"parquet/{path.name}", "parquet", target, target.read_bytes()))
    return made


def bait(scratch: Path) -> Path:
    """A valid trace outside every run directory: a manifest naming it must be refused."""
    target = scratch / "outside" / "secret.pt.trace.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(GAUDI, target)
    return target
