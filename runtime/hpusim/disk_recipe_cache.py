"""The on-disk recipe cache (`PT_HPU_RECIPE_CACHE_CONFIG`, `PT_RECIPE_CACHE_PATH`), as the 1.19
bridge's `serialization::RecipeCache` and `DiskCache` keep it
(pytorch_helpers/habana_helpers/habana_serialization/recipe_cache.cpp, cache_file_handler.cpp,
base_cache_file_handler.cpp; backend/kernel/hpu_recipe_cache.cpp).

Opening it creates the folder (and its parents; a new folder gets owner and group rwx); with
`delete_on_init` the rank with LOCAL_RANK 0 empties it. Every compiled recipe is stored as two
files, `<key><suffix>.recipe` and `<key><suffix>.metadata`, where `<key>` is the recipe's
argument-spec hash (`RecipeCache.spec_hash`) and the suffix `_<libs/env hash>_syn<version>` ties
the entry to the software that wrote it (empty with `PT_RECIPE_CACHE_IGNORE_VERSION=1`). A recipe
missing from the in-memory cache is looked up on disk first: found, it runs without a compile
(a cache hit), so a second process with the same setting compiles only what the first did not.
Beyond 99 % of `max_size_mb` (0: no limit) the oldest recipes are evicted
(`evict_recipe_if_needed`).

Differs on purpose: the `.recipe` file holds the emulator's description of the graph (JSON),
not Synapse's serialized binary, and the suffix hashes the emulator and the device profile
instead of libSynapse and the bridge library.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import warnings
from pathlib import Path
from typing import Any

from hpusim.env import DRIVER_VERSION, RecipeCacheConfig

RECIPE_SUFFIX = ".recipe"
METADATA_SUFFIX = ".metadata"


def cache_id_suffix(device_profile: str, env: dict[str, str] | None = None) -> str:
    """`DiskCache`'s `_<libs_env_hash>_syn<version>`, or "" with PT_RECIPE_CACHE_IGNORE_VERSION."""
    e = os.environ if env is None else env
    if e.get("PT_RECIPE_CACHE_IGNORE_VERSION", "").strip().lower() in ("1", "true"):
        return ""
    text = f"hpusim:{device_profile}"
    digest = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return f"_{digest}_syn{DRIVER_VERSION}"


class DiskRecipeCache:
    """Recipes kept in a folder across processes."""

    def __init__(self, config: RecipeCacheConfig, suffix: str) -> None:
        self.path = Path(config.path)
        self.max_bytes = config.max_size_mb * 1024 * 1024
        self.suffix = suffix
        try:
            created = not self.path.is_dir()
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OSError(
                f"Cannot create cache directory({config.path}). Error message :{err.strerror}"
            ) from err
        if created:
            mode = self.path.stat().st_mode
            self.path.chmod(mode | stat.S_IRWXU | stat.S_IRWXG)
        if config.delete_on_init and os.environ.get("LOCAL_RANK", "0") == "0":
            for entry in self.path.iterdir():
                with contextlib.suppress(OSError):  # the bridge's fs::remove: files only
                    entry.unlink()

    def _files(self, key: str) -> tuple[Path, Path]:
        cache_id = key + self.suffix
        return self.path / (cache_id + RECIPE_SUFFIX), self.path / (cache_id + METADATA_SUFFIX)

    def find(self, key: str) -> dict[str, Any] | None:
        """The metadata of a stored recipe, or None (`DiskCache::Find`)."""
        _, metadata = self._files(key)
        try:
            found: dict[str, Any] = json.loads(metadata.read_text())
        except (OSError, ValueError):
            return None
        return found

    def store(self, key: str, recipe: dict[str, Any], metadata: dict[str, Any]) -> None:
        """Write a compiled recipe unless another process has (`RecipeCache::store_task`: the
        metadata file, locked, is the entry; it is written after the recipe)."""
        recipe_path, metadata_path = self._files(key)
        try:
            fd = os.open(metadata_path, os.O_RDWR | os.O_CREAT, 0o777)
        except OSError:
            return  # the bridge warns "Cannot open cache directory for writing." and goes on
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.lseek(fd, 0, os.SEEK_END) == 0:
                recipe_path.write_text(json.dumps(recipe))
                os.write(fd, json.dumps(metadata).encode())
        finally:
            os.close(fd)  # closing releases the lock
        self._evict()

    def _evict(self) -> None:
        """Oldest recipes first until the folder's recipes fit 99 % of `max_bytes`
        (`getMaxFolderSize`; a size of 0 turns eviction off)."""
        if self.max_bytes == 0:
            return
        limit = 0.99 * self.max_bytes
        entries = []
        for recipe in self.path.glob("*" + RECIPE_SUFFIX):
            metadata = recipe.with_suffix(METADATA_SUFFIX)
            with contextlib.suppress(OSError):
                size = recipe.stat().st_size + metadata.stat().st_size
                entries.append((recipe.stat().st_mtime_ns, size, recipe, metadata))
        total = sum(e[1] for e in entries)
        for _, size, recipe, metadata in sorted(entries, key=lambda e: e[0]):
            if total <= limit:
                break
            with contextlib.suppress(OSError):
                recipe.unlink()
                metadata.unlink()
                total -= size


def open_disk_cache(config: RecipeCacheConfig, device_profile: str) -> DiskRecipeCache | None:
    """The disk cache the settings ask for, or None (no path). A folder that cannot be created
    is the bridge's PT_HABHELPER fatal error; here a warning, and no disk cache (a profiler
    does not end the program it profiles)."""
    if not config.path:
        return None
    try:
        return DiskRecipeCache(config, cache_id_suffix(device_profile))
    except OSError as err:
        warnings.warn(f"hpusim: no on-disk recipe cache: {err}", RuntimeWarning, stacklevel=2)
        return None
