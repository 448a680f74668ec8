"""`habana_frameworks.torch.dynamo` (emulated): `compile_backend` (the `hpu_backend` dynamo
backend, registered by `hpusim.enable()` and kept registered while the emulator is on)."""

from . import compile_backend

__all__ = ["compile_backend"]
