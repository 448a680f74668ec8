"""Dynamic-shape buckets: `PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES=1`, as the 1.19 bridge's
`DynamicBucketInfo` (backend/helpers/dynamic_bucket_info.cpp) picks a recipe for new shapes.

With the flag on, a lazy graph whose sizes changed does not get an exact-shape recipe: the
graph's shape-free key owns a list of buckets, each a recipe compiled for a range of sizes.
The first shapes seen make bucket 0 (static, exactly those sizes). A later shape goes to the
narrowest bucket whose ranges hold it (`GetBucketId`: lowest score = summed range widths);
none holds it: a new bucket is compiled, its ranges from the default policies
(`PT_HPU_DYNAMIC_MIN_POLICY_ORDER` "4,..." = LOCAL_HISTORIC, `..._MAX_POLICY_ORDER` "2,..." =
CALCULATED, `CalculateRanges`):

- min: the smallest value each dimension had in the shapes that made buckets (a 1 never
  counts: broadcast dimensions), the current value when that is below 2;
- max: the current value times 2; a dimension that is 1 now is the range [1, 1]
  (`PT_HPU_ENABLE_BROADCAST_BUCKET_HANDLING`, on by default).

A dimension becomes dynamic once it differs from bucket 0's (`CollectDynamicDims`); a bucket
made before it did requires that dimension at bucket 0's value (`IsInRangeStaticDims`).

Approximated: the bridge buckets only the graph's *input* shapes (intermediate sizes follow by
shape inference, and view / slice sizes travel as shape tensors); the emulator's graph key
holds every op's sizes, strides, offsets and integer arguments, so each of those integers is a
bucketed dimension. They change together with the inputs in the graphs checked (a batch
dimension), giving the same buckets; an integer that varies on its own (a slice end) gets its
own range. The background refinement of buckets (`RefinementEngine`, splitting a bucket after
5 runs) runs only with `PT_HPU_ENABLE_COMPILE_THREAD=1` (off by default) and is not emulated;
user ranges (`mark_dynamic` min/max) are not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INT_MAX = 2147483647
MAX_MULTIPLIER = 2
"""`default_max_multiplier_` (dynamic_bucket_info.h:810)."""
MIN_VALUE = 2
"""`default_min_value_`: below it a dimension's min is its current value."""


def split_numbers(key: Any) -> tuple[Any, tuple[int, ...]]:
    """A graph key without its integers (the template) and the integers in order."""
    numbers: list[int] = []

    def walk(x: Any) -> Any:
        if type(x) is int:
            numbers.append(x)
            return "#"
        if isinstance(x, tuple):  # torch.Size too
            return tuple(walk(v) for v in x)
        return x

    return walk(key), tuple(numbers)


@dataclass(frozen=True)
class Bucket:
    """A recipe's size ranges: (min, max) for the first `len(ranges)` dynamic dimensions."""

    ranges: tuple[tuple[int, int], ...]

    @property
    def score(self) -> int:
        return sum(hi - lo for lo, hi in self.ranges)


@dataclass
class DynamicBucketInfo:
    """One graph's buckets (the bridge keeps one per JIT graph hash)."""

    ref: tuple[int, ...]
    dynamic: list[int] = field(default_factory=list)
    local_min: list[int] = field(default_factory=list)
    buckets: list[Bucket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.local_min = [INT_MAX if v == 1 else v for v in self.ref]
        self.buckets.append(Bucket(()))  # bucket 0: the reference shapes, static

    def bucket_for(self, numbers: tuple[int, ...]) -> tuple[int, bool]:
        """(bucket index, whether it was created now) for a graph with these sizes."""
        for i, (a, b) in enumerate(zip(self.ref, numbers, strict=True)):
            if a != b and i not in self.dynamic:
                self.dynamic.append(i)
        dims = [numbers[i] for i in self.dynamic]
        best: int | None = None
        for index, bucket in enumerate(self.buckets):
            if self._holds(bucket, dims) and (
                best is None or self.buckets[best].score > bucket.score
            ):
                best = index
        if best is not None:
            return best, False
        self.buckets.append(Bucket(self._ranges(numbers)))
        return len(self.buckets) - 1, True

    def ranges(self, index: int) -> dict[int, tuple[int, int]]:
        """A bucket's ranges by position of the integer in the key."""
        return dict(zip(self.dynamic, self.buckets[index].ranges, strict=False))

    def _holds(self, bucket: Bucket, dims: list[int]) -> bool:
        k = len(bucket.ranges)
        if any(not lo <= d <= hi for (lo, hi), d in zip(bucket.ranges, dims, strict=False)):
            return False
        return all(dims[j] == self.ref[self.dynamic[j]] for j in range(k, len(dims)))

    def _ranges(self, numbers: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
        for i, v in enumerate(numbers):  # CalculateLocalHistoricMin
            if v != 1 and v < self.local_min[i]:
                self.local_min[i] = v
        out = []
        for i in self.dynamic:
            current = numbers[i]
            low = 1 if current == 1 else self.local_min[i]
            if low == 0:
                low = current
            high = 1 if low == 1 else current * MAX_MULTIPLIER
            out.append((low if current >= MIN_VALUE else current, high))
        return tuple(out)


class DynamicBuckets:
    """Graph templates to their bucket infos; `place(key)` names the recipe a key runs."""

    def __init__(self) -> None:
        self._infos: dict[Any, DynamicBucketInfo] = {}

    def place(self, key: Any) -> tuple[Any, DynamicBucketInfo, int, bool]:
        """(the bucket's recipe key, the graph's info, bucket index, created now)."""
        template, numbers = split_numbers(key)
        info = self._infos.get(template)
        if info is None:
            info = self._infos[template] = DynamicBucketInfo(numbers)
            return ("bucket", template, 0), info, 0, True
        index, created = info.bucket_for(numbers)
        return ("bucket", template, index), info, index, created

    def clear(self) -> None:
        self._infos.clear()
