"""The optional compiled scanner of a `traceEvents` chunk (`_kineto_scan.c`), found lazily.

`scan(chunk)` returns the chunk's columns as byte buffers (see the C file's header), or None
when the extension is not built, `HPUPROF_PURE_PYTHON=1` is set, or the chunk holds anything
the scanner leaves to the msgspec path (a syntax error, a wrong cut, an unusual value type):
the caller then decodes that chunk the pure-Python way, which gives the same columns or the
same error.
"""

from __future__ import annotations

import os
import warnings
from functools import cache
from typing import Any

from hpuprof.trace.schema import ARG_KEYS, ARG_PREFIX, ARG_VALUE_KEYS

ABI = 6
"""The interface version of `_kineto_scan.c` this module speaks (its `KINETO_SCAN_ABI`)."""

SCANNED_ARGS: tuple[tuple[str, bytes, bytes], ...] = (
    # (column, args key, kind: i int64 id, r raw JSON array, v raw JSON value, t tagged text,
    # f flag, p key prefix: per row, one bit per `key_bucket` of the other keys with the
    # prefix that it holds)
    ("external_id", b"External id", b"i"),
    ("correlation", b"correlation", b"i"),
    ("stream", b"stream", b"i"),
    ("device", b"device", b"i"),
    ("input_dims", b"Input Dims", b"r"),
    ("input_types", b"Input type", b"r"),
    ("recipe_id", b"recipeId", b"t"),
    *(
        (field, key.encode(), b"f" if field == "fallback" else b"t")
        for field, key in ARG_KEYS.items()
    ),
    *((field, key.encode(), b"v") for field, key in ARG_VALUE_KEYS.items()),
    ("data_type", b"dataType", b"v"),
    # rows holding hpuprof keys besides these: their args are decoded later (arg_columns.py)
    ("our_keys", ARG_PREFIX.encode(), b"p"),
)
_KEYS = tuple(key for _, key, _ in SCANNED_ARGS)
_KINDS = b"".join(kind for _, _, kind in SCANNED_ARGS)


@cache
def _module() -> Any:
    if os.environ.get("HPUPROF_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from hpuprof.trace import _kineto_scan
    except ImportError:
        return None
    if getattr(_kineto_scan, "ABI", None) != ABI:
        warnings.warn(
            f"{_kineto_scan.__file__} is a build of another version of the compiled scanner; "
            "loading traces the pure-Python way (rebuild: pip install -e .)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return _kineto_scan


ALL_BUCKETS = (1 << 64) - 1
"""The marks of a row that may hold any key with the prefix (its keys not told apart)."""


def key_bucket(key: str) -> int:
    """The bit that the scanner's 'p' column sets for `key` (the C file's `key_bucket`)."""
    h = 0
    for byte in key.encode():
        h = (h * 31 + byte) & 0xFFFFFFFF
    return 1 << (h & 63)


def available() -> bool:
    """True when chunks go through the compiled scanner (built, and not switched off)."""
    return _module() is not None


def scan(chunk: Any, *, spans: bool = False) -> tuple[Any, ...] | None:
    """The columns of `chunk` (the bytes between events-array brackets), or None. With
    `spans`, the args column is where each row's args lie in `chunk` (starts and lengths),
    not a copy of them."""
    module = _module()
    if module is None:
        return None
    result: tuple[Any, ...] | None = module.scan(chunk, _KEYS, _KINDS, spans)
    return result


def gather_function() -> Any:
    """The compiled `gather` (rows' bytes copied from many buffers into one), or None."""
    return getattr(_module(), "gather", None)


def nest_function() -> Any:
    """The compiled `nest` (depth and parent of sorted slices in one pass), or None."""
    return getattr(_module(), "nest", None)


def release() -> None:
    """Free the buffers the scanner keeps from one chunk to the next (after a file's last)."""
    module = _module()
    if module is not None:
        module.release()
