"""`habana_frameworks.torch.hpu.streams` (emulated): streams of the one modeled device stream."""

from hpusim.device_module import (
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    get_stream_info,
    record_stream,
    set_stream,
    stream,
)

__all__ = [
    "Stream",
    "StreamContext",
    "current_stream",
    "default_stream",
    "get_stream_info",
    "record_stream",
    "set_stream",
    "stream",
]
