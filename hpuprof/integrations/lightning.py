"""`Trainer(profiler=HPUProfiler(...))`: hpuprof as a Lightning profiler (extra `lightning`).

Mirrors lightning-habana's `HPUProfiler` surface (`dirpath`, `filename`, one output per rank)
on top of `hpuprof.capture.HPUProfiler`: recording runs from `setup` to `teardown`; each
`training_step` / `validation_step` / `test_step` / `predict_step` action is an annotated span
and ends a profiler step (which drives `schedule`), as Lightning's PyTorchProfiler does; other
actions are annotated spans. `summary()` returns hpuprof's analysis summary (lightning-habana's
returns "Summary not supported for HPU Profiler").

Like lightning-habana's, it refuses to run beside the Intel Gaudi Profiler's whole-process
recording (`HABANA_PROFILE` set to anything but `profile_api_light`): its constructor raises
with lightning-habana's own message (`lightning_habana/pytorch/profiler/profiler.py`, an
`assert` there; here `HabanaProfileConflict`, an `AssertionError` and a `UsageError`, so it is
raised under `python -O` too and the CLI reports it as one line).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from hpuprof.capture.profiler import HPUProfiler as _Capture
from hpuprof.errors import UsageError

STEP_FUNCTIONS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
LIGHTNING_PROFILER_MODULES = ("lightning.pytorch.profilers", "pytorch_lightning.profilers")
"""Where Lightning's `Profiler` base class lives: the unified package first, then the old one."""


HABANA_PROFILE_ALLOWED: Final = (None, "profile_api_light")
"""The `HABANA_PROFILE` values lightning-habana's `HPUProfiler` runs beside (unset, or the
light API profiling mode)."""
HABANA_PROFILE_REFUSAL: Final = "`HABANA_PROFILE` should not be set when using `HPUProfiler`"
"""lightning-habana's message, word for word."""


class HabanaProfileConflict(UsageError, AssertionError):
    """`HPUProfiler` asked for while `HABANA_PROFILE` has the Intel Gaudi Profiler record the
    whole process (lightning-habana asserts; an `AssertionError` here too)."""


def refuse_beside_habana_profile(environ: Mapping[str, str] | None = None) -> None:
    """Raise `HabanaProfileConflict` when `HABANA_PROFILE` (in `environ`, default the
    process's) is set to anything lightning-habana's `HPUProfiler` does not run beside."""
    value = (os.environ if environ is None else environ).get("HABANA_PROFILE")
    if value not in HABANA_PROFILE_ALLOWED:
        raise HabanaProfileConflict(HABANA_PROFILE_REFUSAL)


def _lightning_profiler_base() -> Any:
    """Lightning's `Profiler` class, or None when neither Lightning package is installed."""
    for module in LIGHTNING_PROFILER_MODULES:
        try:
            return importlib.import_module(module).Profiler
        except ImportError:
            continue
    return None


_Base: Any = _lightning_profiler_base()
LIGHTNING_AVAILABLE = _Base is not None


def _action_key(action_name: str) -> str | None:
    """Lightning names step actions like `[Strategy]SingleDeviceStrategy.training_step`."""
    tail = action_name.rsplit(".", 1)[-1]
    return tail if tail in STEP_FUNCTIONS else None


if _Base is not None:

    class HPUProfiler(_Base):
        """A Lightning `Profiler` writing an hpuprof run directory.

        Args:
            dirpath: run directory; default the trainer's `log_dir` / `hpuprof`.
            filename: trace stem (rank and stage are added).
            **profiler_kwargs: passed to `hpuprof.HPUProfiler` (schedule, record_shapes, ...).

        Raises:
            HabanaProfileConflict: `HABANA_PROFILE` is set (as lightning-habana's does).
        """

        def __init__(
            self,
            dirpath: str | Path | None = None,
            filename: str | None = None,
            **profiler_kwargs: Any,
        ) -> None:
            super().__init__(dirpath=dirpath, filename=filename)
            self._kwargs = profiler_kwargs
            self._capture: _Capture | None = None
            # after the base's state exists: its __del__ tears down the refused object too
            # ("Exception ignored in Profiler.__del__: no attribute '_stage'" otherwise)
            refuse_beside_habana_profile()

        def setup(
            self, stage: str, local_rank: int | None = None, log_dir: str | None = None
        ) -> None:
            super().setup(stage=stage, local_rank=local_rank, log_dir=log_dir)
            root = self.dirpath or (Path(log_dir) / "hpuprof" if log_dir else None)
            stem = "-".join(p for p in (stage, self.filename or "trace") if p)
            self._capture = _Capture(root, filename=stem, **self._kwargs)
            self._capture.start()

        def start(self, action_name: str) -> None:
            if self._capture is not None and self._capture.running:
                self._capture.start(action_name)

        def stop(self, action_name: str) -> None:
            capture = self._capture
            if capture is None or not capture.running:
                return
            try:
                capture.stop(action_name)
            except Exception:  # Lightning stops actions it never started (e.g. on errors)
                return
            if _action_key(action_name) is not None:
                capture.step()

        def summary(self) -> str:
            return self._capture.summary() if self._capture is not None else ""

        def teardown(self, stage: str | None) -> None:
            if self._capture is not None and self._capture.running:
                self._capture.stop()
            super().teardown(stage=stage)

else:

    class HPUProfiler:  # type: ignore[no-redef]
        """Placeholder when Lightning is not installed: constructing it explains what to do."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(
                "hpuprof.integrations.lightning needs Lightning: pip install 'hpuprof[lightning]'"
            )
