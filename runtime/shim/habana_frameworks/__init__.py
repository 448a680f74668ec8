"""Drop-in `habana_frameworks` for the hpusim emulator (source/editable checkouts only).

Put on `sys.path` by `hpusim.enable()` or `hpuprof record --emulate` (and on `PYTHONPATH` for
the emulated process's children); importing it enables the emulator if a launcher placed it on
the path without enabling it (the device from `HPUSIM_DEVICE`). Never install this package: on
a Gaudi machine it would shadow the real bridge.
"""

import os

import hpusim

if not hpusim.is_enabled():
    hpusim.enable(device=os.environ.get("HPUSIM_DEVICE", "gaudi2"))
