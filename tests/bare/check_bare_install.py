"""Checks a bare install: run by `make bare` with the python of a venv made by `pip install .`
(no extras). `import hpuprof` pulls in nothing heavy, torch, dash and plotly are not even
installed, and `hpuprof info` / `hpuprof analyze` work on sample traces and a run directory.

Exits 1 with one line per problem; prints what it checked otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tests" / "trace" / "data" / "gaudi_merged.json"
RUN_DIR = REPO / "sample_traces" / "emulated_lazy"
ABSENT = ("torch", "dash", "plotly")
NOT_IMPORTED = (*ABSENT, "hpusim", "hpudash")


def main() -> int:
    problems: list[str] = []
    installed = [name for name in ABSENT if importlib.util.find_spec(name) is not None]
    if installed:
        problems.append(f"a bare install should not hold {', '.join(installed)}")
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as scratch:  # not the source tree: the installed package
        env = {**os.environ, "HPUPROF_CACHE_DIR": str(Path(scratch) / "cache")}
        env.pop("PYTHONPATH", None)
        probe = (
            "import sys, hpuprof, hpuprof.trace.load, hpuprof.analysis, hpuprof.cli.main;"
            "hpuprof.cli.main.build_app();"
            "from hpuprof.trace import fastscan;"
            f"print(hpuprof.__file__, fastscan.available(), [m for m in {NOT_IMPORTED!r} if m in sys.modules])"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, cwd=scratch, env=env
        )
        if done.returncode != 0:
            problems.append(f"import hpuprof failed: {done.stderr.strip().splitlines()[-1:]}")
        else:
            where, compiled, heavy = done.stdout.strip().split(" ", 2)
            if not where.startswith(sys.prefix):
                problems.append(f"imported hpuprof from {where}, not from the bare venv")
            if heavy != "[]":
                problems.append(f"import hpuprof imported {heavy}")
            print(f"import hpuprof: {where} (compiled scanner: {compiled}), nothing heavy imported")
        report = Path(scratch) / "report.json"
        commands = [
            ["info", str(SAMPLE)],
            ["analyze", str(SAMPLE)],
            ["analyze", str(RUN_DIR), "--format", "json", "-o", str(report)],
            ["info", str(RUN_DIR)],
        ]
        for args in commands:
            done = subprocess.run(
                [str(bin_dir / "hpuprof"), *args],
                capture_output=True,
                text=True,
                cwd=scratch,
                env=env,
            )
            said = (done.stderr.strip().splitlines() or [""])[-1]
            if done.returncode != 0 or "Traceback" in done.stderr:
                problems.append(
                    f"hpuprof {' '.join(args[:1])} {args[1]}: exit {done.returncode}: {said}"
                )
            else:
                print(f"hpuprof {' '.join(args)}: ok ({len(done.stdout.splitlines())} lines)")
        if report.is_file() and report.stat().st_size < 10:
            problems.append("hpuprof analyze --format json wrote an empty report")
    for problem in problems:
        print(f"bare install: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
