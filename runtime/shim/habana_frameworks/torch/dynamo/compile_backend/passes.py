"""`compile_backend.passes` (emulated): its logger (the bridge's tests capture it)."""

import logging

logger = logging.getLogger("habana_frameworks.torch.dynamo.compile_backend.passes")
