"""`habana_frameworks.torch.activity_profiler` (emulated): `DebugActivity`; importing the bridge
patches `torch.profiler` (`ProfilerActivity.HPU`), which `hpusim.enable()` has done already."""

from hpusim.activity_profiler import DebugActivity, HabanaProfilerActivity

__all__ = ["DebugActivity", "HabanaProfilerActivity"]
