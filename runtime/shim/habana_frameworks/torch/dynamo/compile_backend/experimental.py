"""`compile_backend.experimental` (emulated): `enable_compiled_autograd(**kwargs)`."""

import functools
import logging
from typing import Any

logger = logging.getLogger("habana_frameworks.torch.dynamo.compile_backend")


def enable_compiled_autograd(**kwargs: Any) -> None:
    """Compile the backward graphs with `hpu_backend` too (torch's compiled autograd), as the
    bridge's helper does; call it before the first torch.compile."""
    import torch
    from torch._dynamo import compiled_autograd

    logger.warning("Enabling CompiledAutograd for hpu_backend with torch.compile")

    def compiler_fn(gm: Any) -> Any:
        return torch.compile(gm, backend="hpu_backend", options={"inference": False}, **kwargs)

    torch._C._dynamo.compiled_autograd.set_autograd_compiler(
        functools.partial(compiled_autograd.AutogradCompilerInstance, compiler_fn), False
    )
    torch._dynamo.reset()
    torch._dynamo.config.optimize_ddp = "python_reducer"
    torch._C._set_autograd_fallback_mode("nothing")
