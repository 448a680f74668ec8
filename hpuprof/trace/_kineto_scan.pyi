ABI: int

def scan(
    buffer: bytes | memoryview, arg_keys: tuple[bytes, ...], arg_kinds: bytes, spans: bool = ..., /
) -> tuple[object, ...] | None: ...
def gather(
    pieces: list[object],
    row_bases: bytes | memoryview,
    starts: bytes | memoryview,
    rows: bytes | memoryview,
    out_offsets: bytes | memoryview,
    out: object,
    /,
) -> None: ...
def nest(
    lane: bytes | memoryview,
    start: bytes | memoryview,
    end: bytes | memoryview,
    depth: object,
    parent: object,
    /,
) -> None: ...
def release() -> None: ...
