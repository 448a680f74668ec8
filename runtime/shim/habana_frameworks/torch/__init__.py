"""`habana_frameworks.torch` (emulated): `ht.hpu`, `ht.core`, `ht.hpex`, `ht.utils`."""

from habana_frameworks.torch import core, hpex, hpu, utils

__all__ = ["core", "hpex", "hpu", "utils"]
