"""The recipe cache: graph keys to recipe ids, and the cause of every compile.

A lazy graph's key is the tuple of its ops' keys; an op key is `(overload name, argument
signature)` where a tensor argument's signature is `("T", sizes, strides, dtype, storage
offset)` and a non-tensor argument is its value. So the key covers the op-graph structure plus
input sizes, strides, dtypes, scalar values and storage offsets, like the bridge's
RecipeArgumentSpec hash (gaudi.md 2.5). A miss whose *structure* (ops and argument kinds) was
seen before is a recompile, and `recompile_cause` says which input changed from what to what.

With refined dynamic shapes on (`dynamic`, dynamic_buckets.py) a key that missed runs its
graph's dynamic bucket's recipe: compiled when the bucket is new, a hit otherwise. With an
on-disk cache (`disk`, disk_recipe_cache.py) a recipe missing here is looked up there before it
is compiled, and every compiled recipe is stored there.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hpusim.dynamic_buckets import DynamicBuckets

if TYPE_CHECKING:
    from hpusim.disk_recipe_cache import DiskRecipeCache

OpKey = tuple[Any, tuple[Any, ...]]
GraphKey = tuple[OpKey, ...]

_FIELDS = ("shape", "stride", "dtype", "storage_offset")
EAGER_RECIPE_BASE = 1 << 20
"""Eager per-op recipe ids start here so they never collide with lazy graph recipe ids."""


def recipe_name(rid: int) -> str:
    """`graph_recipe_<id>` for lazy graphs, `eager_recipe_<id>` for eager per-op recipes."""
    return f"eager_recipe_{rid}" if rid >= EAGER_RECIPE_BASE else f"graph_recipe_{rid}"


def _is_tensor_sig(x: Any) -> bool:
    return type(x) is tuple and len(x) == 5 and x[0] == "T"


def _kind(x: Any) -> Any:
    if _is_tensor_sig(x):
        return "T"
    if type(x) is tuple:
        return tuple(_kind(v) for v in x)
    return type(x).__name__


def structure_of(key: GraphKey) -> tuple[Any, ...]:
    """The op-graph structure: ops in order with their argument kinds (no sizes, no values)."""
    return tuple((func, tuple(_kind(a) for a in sig)) for func, sig in key)


def _fmt(field: str, v: Any) -> str:
    if field in {"shape", "stride"}:
        return str(list(v))
    if field == "dtype":
        return str(v).replace("torch.", "")
    return repr(v)


def _op_label(func: Any) -> str:
    if isinstance(func, str):
        return func
    name = getattr(func, "_schema", None)
    return str(name.name) if name is not None else str(func)


def _diff_args(
    a: Any, b: Any, path: tuple[int, ...]
) -> tuple[str, tuple[int, ...], Any, Any] | None:
    if _is_tensor_sig(a) and _is_tensor_sig(b):
        for i, field in enumerate(_FIELDS, start=1):
            if a[i] != b[i]:
                return field, path, _fmt(field, a[i]), _fmt(field, b[i])
        return None
    if type(a) is tuple and type(b) is tuple and len(a) == len(b):
        for j, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _diff_args(x, y, (*path, j))
            if d is not None:
                return d
        return None
    if a != b or type(a) is not type(b):
        return "scalar", path, repr(a), repr(b)
    return None


def recompile_cause(old: GraphKey | None, new: GraphKey) -> dict[str, Any]:
    """Why `new` needed a compile, as `hpuprof.cause` (docs/trace-keys.md).

    Args:
        old: the last compiled key with the same structure, or None for a new graph.
        new: the key that missed.
    """
    if old is None:
        return {"kind": "new_graph", "text": f"new graph of {len(new)} ops"}
    for op_index, ((func, a), (_, b)) in enumerate(zip(old, new, strict=True)):
        d = _diff_args(a, b, ())
        if d is None:
            continue
        field, path, frm, to = d
        arg = path[0] if path else 0
        where = "".join(f"[{p}]" for p in path[1:])
        label = _op_label(func)
        text = (
            f"op {op_index} ({label}) input {arg}{where}: {field.replace('_', ' ')} "
            f"changed from {frm} to {to}"
        )
        return {
            "kind": field,
            "input": arg,
            "op_index": op_index,
            "op": label,
            "from": frm,
            "to": to,
            "text": text,
        }
    return {"kind": "structure", "text": "same structure, different graph key"}


@dataclass
class Lookup:
    """Result of a cache lookup: the recipe id, whether it hit, and a miss's cause."""

    recipe_id: int
    hit: bool
    cause: dict[str, Any] | None


class RecipeCache:
    """Graph keys to recipe ids; remembers the last key of each structure for recompile causes."""

    def __init__(
        self, first_id: int = 1, dynamic: bool = False, disk: DiskRecipeCache | None = None
    ) -> None:
        self._ids: dict[Any, int] = {}
        self._last_by_structure: dict[Any, Any] = {}
        self._hashes: dict[int, str] = {}
        self._next = first_id
        self._buckets = DynamicBuckets()
        self._bucketed: dict[Any, int] = {}  # exact keys that ran a bucket's recipe
        self.dynamic = dynamic
        """`PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES` (and `enable_dynamic_shape()`): bucketed
        recipes for changing sizes."""
        self.disk = disk

    def __len__(self) -> int:
        return len(self._ids)

    def get(self, key: Any) -> int | None:
        """The recipe id of `key` if compiled before."""
        return self._ids.get(key)

    def lookup(self, key: GraphKey) -> Lookup:
        """Find `key`; on a miss add it and explain why it was compiled."""
        rid = self._ids.get(key, self._bucketed.get(key))
        if rid is not None:
            return Lookup(rid, True, None)
        struct = structure_of(key)
        cause = recompile_cause(self._last_by_structure.get(struct), key)
        if self.dynamic:
            return self._lookup_bucket(key, struct, cause)
        rid, on_disk = self._compile(key, len(key))
        self._last_by_structure[struct] = key
        return Lookup(rid, on_disk, None if on_disk else cause)

    def _compile(self, key: Any, n_ops: int) -> tuple[int, bool]:
        """A recipe for a key not in memory: (its id, whether the disk cache had it)."""
        rid = self._add(key)
        if self.disk is None:
            return rid, False
        spec = self.spec_hash(rid)
        if self.disk.find(spec) is not None:
            return rid, True
        recipe = {"emulated": "hpusim", "graph": repr(key)}
        self.disk.store(spec, recipe, {"recipe_id": spec, "ops": n_ops})
        return rid, False

    def _lookup_bucket(self, key: GraphKey, struct: Any, cause: dict[str, Any]) -> Lookup:
        bucket_key, info, index, created = self._buckets.place(key)
        rid = self._ids.get(bucket_key)
        if rid is not None and not created:
            self._bucketed[key] = rid
            return Lookup(rid, True, None)
        rid, on_disk = self._compile(bucket_key, len(key))
        self._bucketed[key] = rid
        self._last_by_structure[struct] = key
        if on_disk:
            return Lookup(rid, True, None)
        if index:  # the distinct (min, max) ranges of the bucket's dimensions
            ranges = [list(r) for r in dict.fromkeys(info.buckets[index].ranges)]
            cause = {
                **cause,
                "bucket": index,
                "ranges": ranges,
                "text": f"{cause['text']}; dynamic bucket {index}, ranges {ranges}",
            }
        return Lookup(rid, False, cause)

    def add_op(self, key: OpKey) -> tuple[int, bool]:
        """Eager per-op recipes: (recipe id, hit)."""
        rid = self._ids.get(key)
        if rid is not None:
            return rid, True
        return self._add(key), False

    def _add(self, key: Any) -> int:
        rid = self._next
        self._next += 1
        self._ids[key] = rid
        return rid

    def spec_hash(self, rid: int) -> str:
        """The recipe's key as the bridge reports it in cache events (`recipe_id`: the decimal
        64-bit hashCode of its argument spec); a stable digest of the graph key here."""
        text = self._hashes.get(rid)
        if text is None:
            key = next((k for k, v in reversed(self._ids.items()) if v == rid), rid)
            digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
            text = self._hashes[rid] = str(int.from_bytes(digest, "little"))
        return text

    def clear(self) -> None:
        self._ids.clear()
        self._bucketed.clear()
        self._buckets.clear()
        self._last_by_structure.clear()
        self._hashes.clear()
