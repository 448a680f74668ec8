"""`habana_frameworks.torch` (emulated): imports what the bridge's package imports
(`activity_profiler`, `core`, `distributed.hccl`, `hpu`), plus `hpex` and `utils`."""

import habana_frameworks.autoload
import hpusim.state as _state
from hpusim.env import raise_if_fatal as _raise_if_fatal

if _state.RT is not None:  # a flag value the bridge cannot convert stops its import
    _raise_if_fatal(_state.RT.flags)

habana_frameworks.autoload.is_loaded = True

from habana_frameworks.torch import activity_profiler, core, hpex, hpu, utils  # noqa: E402
from habana_frameworks.torch.distributed import hccl  # noqa: E402

__all__ = ["activity_profiler", "core", "hccl", "hpex", "hpu", "utils"]
