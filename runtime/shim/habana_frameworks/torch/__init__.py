"""`habana_frameworks.torch` (emulated): imports what the bridge's package imports
(`activity_profiler`, `core`, `distributed.hccl`, `hpu`), plus `hpex` and `utils`."""

import habana_frameworks.autoload

habana_frameworks.autoload.is_loaded = True

from habana_frameworks.torch import activity_profiler, core, hpex, hpu, utils  # noqa: E402
from habana_frameworks.torch.distributed import hccl  # noqa: E402

__all__ = ["activity_profiler", "core", "hccl", "hpex", "hpu", "utils"]
