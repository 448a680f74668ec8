"""Drop-in `habana_frameworks` for the hpusim emulator (source/editable checkouts only).

Put on `sys.path` by `hpusim.enable()` or `hpuprof record --emulate`; importing it enables the
emulator if a launcher placed it on the path without enabling it. Never install this package:
on a Gaudi machine it would shadow the real bridge.
"""

import hpusim

if not hpusim.is_enabled():
    hpusim.enable()
