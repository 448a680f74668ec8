"""Regenerate the sample traces (`make samples`). Each sample is a fresh process.

Emulated samples run `workloads/gaudi_train.py` unchanged under `hpuprof record --emulate`
(the two-rank sample runs `workloads/ddp_train.py`, one process per rank, `hccl` all-reduce);
the CPU sample is plain torch.profiler. Seeds are fixed, so the ops, shapes, compiles and
modeled device times are the same every run; host timestamps are measured, so they differ.
A sample whose runtime feature is missing (e.g. HPU graphs) is reported and skipped.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TRAIN = HERE / "workloads" / "gaudi_train.py"
DDP = HERE / "workloads" / "ddp_train.py"

# name: (hpuprof record options, script args)
EMULATED: dict[str, tuple[list[str], list[str]]] = {
    "emulated_lazy": (["--mode", "lazy"], []),
    "emulated_eager": (["--mode", "eager"], []),
    "emulated_compile": (["--mode", "compile"], ["--compile"]),
    "emulated_bf16": (["--mode", "lazy"], ["--bf16"]),
    "emulated_hpu_graph": (["--mode", "lazy"], ["--hpu-graph-infer"]),
    "emulated_gaudi3_lazy": (["--mode", "lazy", "--device", "gaudi3"], []),
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "runtime")])
    env.update(extra)
    return env


def _record_cmd(out: Path, options: list[str], script: Path, args: list[str]) -> list[str]:
    cmd = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "record", "--emulate"]
    return [*cmd, *options, "-o", str(out), "--", "python", str(script), *args]


def _record(out: Path, options: list[str], args: list[str], **env: str) -> bool:
    cmd = _record_cmd(out, options, TRAIN, args)
    done = subprocess.run(cmd, env=_env(**env), capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        print(f"  skipped {out.name}: {done.stderr.strip().splitlines()[-1:]}")
        return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _record_ranks(out: Path, world: int = 2) -> bool:
    """`workloads/ddp_train.py`, one `hpuprof record` process per rank, into one run dir."""
    port = str(_free_port())
    procs = [
        subprocess.Popen(
            _record_cmd(out, ["--mode", "lazy"], DDP, []),
            env=_env(RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=port),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for r in range(world)
    ]
    ok = True
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            print(f"  skipped {out.name}: {err.strip().splitlines()[-1:]}")
            ok = False
    return ok


def _tidy(run: Path) -> None:
    for cache in run.rglob("*.hpuprof-cache"):
        shutil.rmtree(cache) if cache.is_dir() else cache.unlink()
    for junk in run.glob(".run.json.lock"):
        junk.unlink()


def main() -> int:
    made: list[str] = []
    for name, (options, args) in EMULATED.items():
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        print(f"making {name}")
        if _record(out, options, args):
            made.append(name)
        else:
            shutil.rmtree(out, ignore_errors=True)
    out = HERE / "emulated_two_ranks"
    shutil.rmtree(out, ignore_errors=True)
    print("making emulated_two_ranks")
    if _record_ranks(out):
        made.append(out.name)
    cpu = HERE / "cpu_torch_profiler"
    shutil.rmtree(cpu, ignore_errors=True)
    cpu.mkdir()
    print("making cpu_torch_profiler")
    subprocess.run(
        [
            sys.executable,
            str(HERE / "workloads" / "cpu_profiler.py"),
            str(cpu / "trace.pt.trace.json"),
        ],
        env=_env(),
        check=True,
        capture_output=True,
    )
    made.append(cpu.name)
    for name in made:
        _tidy(HERE / name)
    total = sum(p.stat().st_size for name in made for p in (HERE / name).rglob("*") if p.is_file())
    print(f"made {len(made)} samples, {total / 1e6:.1f} MB: {', '.join(made)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
