"""Importing capture is light: the profiler, `hpuprof record`'s session and the emulated cards
import neither torch, the emulator nor pandas until a run needs them (the backends import torch
when they start; the Perfetto export and the summary load the trace after the run)."""

from __future__ import annotations

import subprocess
import sys

from .helpers import child_env

HEAVY = ("torch", "hpusim", "pandas", "pyarrow", "hpuprof.analysis", "hpuprof.trace.load")


def test_capture_modules_import_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "import hpuprof.capture.profiler, hpuprof.capture.record_session, hpuprof.capture.cards\n"
        "import hpuprof.capture.backends\n"
        "from hpuprof import HPUProfiler\n"
        "HPUProfiler('unused-dir', backend='cpu')\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""
