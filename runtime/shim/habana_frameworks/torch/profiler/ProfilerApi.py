"""`habana_frameworks.torch.profiler.ProfilerApi` (emulated): the deprecated host-profiler
calls of the bridge's profiler/ProfilerApi.py, each a UserWarning naming its replacement."""

import warnings

import habana_frameworks.torch.utils.profiler as htprofiler


def _deprecated(name: str) -> None:
    warnings.warn(
        f"habana_frameworks.torch.profiler.{name}_profiler is deprecated. "
        f"Please use habana_frameworks.torch.utils.profiler._{name}_profiler",
        stacklevel=3,
    )


def setup_profiler() -> None:
    _deprecated("setup")
    htprofiler._setup_profiler()


def start_profiler() -> None:
    _deprecated("start")
    htprofiler._start_profiler()


def stop_profiler() -> None:
    _deprecated("stop")
    htprofiler._stop_profiler()
