"""The emulated card's modeled HBM allocator (MODELED: no fragmentation or caching).

Every device storage the runtime creates (parameters, gradients, optimizer states, activations,
H2D copies, factory tensors, HPU-graph static tensors) gets a storage id (`gid`) and a size;
views share their base's id and keep it alive; the storage is freed when its last wrapper dies,
or when its storage is resized (FSDP frees unsharded parameters with `untyped_storage()
.resize_(0)` and re-allocates them by resizing back: `resize`, called by `tensor.py`'s storage).
The allocator keeps the bytes in use, their peak, and the first op that would not have fitted in
the card's usable HBM (`oom_at`): the run goes on (the emulator's memory is the host's, or none
at all with fake compute), the prediction says where a Gaudi would have failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hpusim.graph_memory import block_bytes


@dataclass(frozen=True)
class OomPoint:
    """Where the modeled HBM ran out: the op, its module, and the bytes it asked for."""

    op: str
    module: str
    requested_bytes: int
    in_use_bytes: int
    capacity_bytes: int

    def text(self) -> str:
        where = f" in {self.module}" if self.module else ""
        return (
            f"{self.op}{where}: {self.requested_bytes / 2**20:.1f} MiB requested with "
            f"{self.in_use_bytes / 2**30:.2f} GiB in use of {self.capacity_bytes / 2**30:.2f} GiB"
        )


def _nowhere() -> str:
    return ""


class DeviceAllocator:
    """Storage ids, sizes and reference counts of the modeled card's HBM."""

    def __init__(self, capacity_bytes: int, where: Callable[[], str] | None = None) -> None:
        """`where()` names the module running now (for the OOM point)."""
        self._where = where or _nowhere
        self.capacity = capacity_bytes
        self._size: dict[int, int] = {}
        self._refs: dict[int, int] = {}
        self._next = 1
        self._emptied: set[int] = set()  # resized to 0 bytes: no block held
        self._by_storage: dict[int, int] = {}  # inner StorageImpl address -> storage id
        self._storage_of: dict[int, int] = {}  # storage id -> inner StorageImpl address
        self.oom_at: OomPoint | None = None
        self.peak = 0  # of the whole run (`reset_peak` resets `max_in_use` only)
        self.peak_op = ""
        # what torch.hpu.memory_stats() reads (device_module.py)
        self.in_use = 0
        self.max_in_use = 0  # since enable or the last `reset_peak`; never above `peak`
        self.max_alloc_size = 0  # since enable or the last `reset_counts`
        self.total_allocs = 0  # since enable
        self.total_frees = 0
        self._counts_from = (0, 0)  # (total_allocs, total_frees) at the last `reset_counts`
        self.alignment = 1
        """Every block is rounded up to it (the device model sets the card's: graph_memory)."""
        self.workspace = 0
        """The recipe workspace held: the largest a launched graph asked for (graph_memory)."""

    def __len__(self) -> int:
        return len(self._size)

    @property
    def num_allocs(self) -> int:
        """Allocations since enable or the last `reset_counts`."""
        return self.total_allocs - self._counts_from[0]

    @property
    def num_frees(self) -> int:
        """Frees since enable or the last `reset_counts`."""
        return self.total_frees - self._counts_from[1]

    def alive(self, gid: int) -> bool:
        """Whether storage `gid` is still referenced."""
        return gid in self._refs

    def alloc(self, t: Any, nbytes: int, op: str = "") -> int:
        """A new storage of `nbytes` held by wrapper `t`; returns its id."""
        gid = self._next
        self._next = gid + 1
        t._gid = gid
        size = block_bytes(int(nbytes), self.alignment)
        self._size[gid] = size
        self._refs[gid] = 1
        self._charge(size, op)
        return gid

    def _charge(self, size: int, op: str) -> None:
        """Count an allocation of `size` bytes: in use, peaks, the OOM point."""
        used = self.in_use + size
        self.in_use = used
        self.total_allocs += 1
        if size > self.max_alloc_size:
            self.max_alloc_size = size
        if used > self.max_in_use:
            self.max_in_use = used
            if used > self.peak:
                self.peak = used
                self.peak_op = op
        if used > self.capacity and self.oom_at is None:
            self.oom_at = OomPoint(op, self._where(), size, used - size, self.capacity)

    def note_graph(self, workspace: int, resident: int, op: str = "recipe launch") -> None:
        """A launched graph needs `workspace` bytes of workspace, which the held buffer grows
        to (it never shrinks, as the bridge's `device_memory::workspace_alloc`), and reads
        `resident` bytes no wrapper holds any more, on the device until the graph has run:
        they count toward the peak, not toward what stays in use."""
        if workspace > self.workspace:
            self._charge(workspace - self.workspace, op)
            self.workspace = workspace
        top = self.in_use + max(resident, 0)
        if top > self.max_in_use:
            self.max_in_use = top
        if top > self.peak:
            self.peak, self.peak_op = top, op
        if top > self.capacity and self.oom_at is None:
            self.oom_at = OomPoint(op, self._where(), resident, self.in_use, self.capacity)

    def _uncharge(self, size: int) -> None:
        self.in_use -= size
        self.total_frees += 1

    def reset_peak(self) -> None:
        """`reset_peak_memory_stats`: the peak in use starts again from what is in use now."""
        self.max_in_use = self.in_use

    def reset_counts(self) -> None:
        """`reset_accumulated_memory_stats`: the allocation and free counts start again."""
        self._counts_from = (self.total_allocs, self.total_frees)
        self.max_alloc_size = 0

    def resize(self, gid: int, nbytes: int, op: str = "storage resize_") -> None:
        """Storage `gid` now holds `nbytes` (its storage was resized): the old block is freed
        and a new one allocated, as the bridge's allocator does (0 bytes: freed only)."""
        old = self._size.get(gid)
        size = block_bytes(int(nbytes), self.alignment)
        if old is None or (old == size and (size or gid in self._emptied)):
            return
        self._size[gid] = size
        if gid not in self._emptied:
            self._uncharge(old)
        if size:
            self._emptied.discard(gid)
            self._charge(size, op)
        else:
            self._emptied.add(gid)

    def bind_storage(self, key: int, gid: int) -> None:
        """The inner storage at address `key` is device storage `gid` (its resizes count)."""
        old = self._storage_of.get(gid)
        if old is not None and old != key:
            self._by_storage.pop(old, None)
        self._by_storage[key] = gid
        self._storage_of[gid] = key

    def storage_resized(self, key: int, nbytes: int) -> None:
        """The inner storage at address `key` was resized to `nbytes`."""
        gid = self._by_storage.get(key)
        if gid is not None and gid in self._refs:
            self.resize(gid, nbytes)

    def share(self, t: Any, gid: int) -> None:
        """Wrapper `t` (a view) references storage `gid`."""
        if gid in self._refs:
            t._gid = gid
            self._refs[gid] += 1

    def release(self, gid: int) -> None:
        """A wrapper of storage `gid` died."""
        refs = self._refs.get(gid)
        if refs is None:
            return
        if refs > 1:
            self._refs[gid] = refs - 1
            return
        del self._refs[gid]
        size = self._size.pop(gid)
        if self._storage_of:  # (empty but where storages are resized: FSDP)
            key = self._storage_of.pop(gid, None)
            if key is not None and self._by_storage.get(key) == gid:
                del self._by_storage[key]
        if self._emptied and gid in self._emptied:  # freed already by a resize to 0
            self._emptied.discard(gid)
        else:
            self.in_use -= size  # (`_uncharge`, without its call on the per-op path)
            self.total_frees += 1
