"""`compile_backend.shared_layer` (emulated): its logger (the bridge's tests capture it)."""

import logging

logger = logging.getLogger("habana_frameworks.torch.dynamo.compile_backend.shared_layer")

hpu_fallback_op_list: set[str] = set()
"""Ops the bridge's compile backend leaves to eager (CPU) execution; the emulator's backend runs
every op on the emulated device, so the set starts empty (tests may add to it)."""
