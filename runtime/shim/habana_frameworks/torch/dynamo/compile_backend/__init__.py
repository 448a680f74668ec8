"""`habana_frameworks.torch.dynamo.compile_backend` (emulated): `backends.hpu_backend`,
`config`, `experimental.enable_compiled_autograd`. `PT_HPU_ENABLE_COMPILED_AUTOGRAD=1`
enables compiled autograd at import, as the bridge does."""

import os

from . import backends, config

if os.environ.get("PT_HPU_ENABLE_COMPILED_AUTOGRAD", "0").lower() in (
    "1",
    "true",
    "on",
    "yes",
    "y",
    "t",
):
    from .experimental import enable_compiled_autograd

    enable_compiled_autograd()

__all__ = ["backends", "config"]
