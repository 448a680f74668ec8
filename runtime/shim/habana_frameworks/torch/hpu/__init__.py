"""`habana_frameworks.torch.hpu` (emulated): the very module object that is `torch.hpu`.

`hpusim.enable()` builds it (`hpusim.device_module`) and places it in `sys.modules` under this
name, so this file only runs when the package is imported some other way: it then installs the
emulator's module and replaces itself with it."""

import sys

from hpusim import device_module as _device_module

sys.modules[__name__] = _device_module.module()
