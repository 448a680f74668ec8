"""A file name as text that every output takes (terminal, JSON, HTML, Arrow metadata).

On POSIX a file name is bytes; Python decodes the bytes that are not UTF-8 to lone surrogates
(`os.fsdecode`, surrogateescape), which `str.encode()`, JSON encoders and a strict UTF-8
terminal refuse. `path_text` shows such a byte as `\\xff` instead: for display and keys only,
never to open the file again (keep the `Path` for that).
"""

from __future__ import annotations

import os


def path_text(path: str | os.PathLike[str]) -> str:
    """`path` as valid UTF-8 text: bytes that are not UTF-8 written as `\\xNN` escapes."""
    text = os.fspath(path)
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text
