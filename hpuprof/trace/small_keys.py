"""`np.unique(keys, return_inverse=True)` for integer keys known to lie in a small range:
the keys are marked in a table (one pass, no sort), as a loader's coded columns allow."""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

TABLE_LIMIT: Final = 1 << 22
"""Largest range marked in a table (4 MiB of marks); wider ranges are sorted."""


def unique_inverse(
    keys: NDArray[np.integer], space: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The distinct keys in ascending order and each key's index among them, as
    `np.unique(keys, return_inverse=True)` gives them. With `space`, every key is in
    [0, space): marked in a table when the range is at most `TABLE_LIMIT`."""
    keys = np.asarray(keys, dtype=np.int64).reshape(-1)
    if space is None or space > TABLE_LIMIT:
        distinct, inverse = np.unique(keys, return_inverse=True)
        return distinct.astype(np.int64), inverse.reshape(-1).astype(np.int64)
    used = np.zeros(max(space, 1), dtype=bool)
    used[keys] = True
    number = np.cumsum(used, dtype=np.int64)
    number -= 1
    return np.flatnonzero(used).astype(np.int64), number[keys]
