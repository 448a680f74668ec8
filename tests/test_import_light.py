"""`import hpuprof` (and its loaders, analyses and CLI) never imports torch, dash or the emulator."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "dash", "plotly", "hpusim", "hpudash")


def test_importing_the_library_pulls_in_nothing_heavy() -> None:
    code = (
        "import sys, hpuprof, hpuprof.trace.load, hpuprof.analysis, hpuprof.render.terminal, "
        "hpuprof.cli.main; hpuprof.cli.main.build_app(); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
