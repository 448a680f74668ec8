"""`dynamo.debug_utils.logger` (emulated): the compile backend's logger."""

import logging


def get_compile_backend_logger() -> logging.Logger:
    return logging.getLogger("habana_frameworks.torch.dynamo.compile_backend")


def get_fx_graph_logger() -> logging.Logger:
    return logging.getLogger("habana_frameworks.torch.dynamo.compile_backend.fx_graph")
