"""The GPU Migration Toolkit's log: one entry per migrated call, as Intel's toolkit writes it.

Read from the environment when the migration is installed (the toolkit configures its logger
at import):
- `GPU_MIGRATION_LOG_LEVEL` unset: no log. `1`: every caller, the script's and torch's own
  (`torch/random.py` calling `torch.cuda.manual_seed_all`), each entry printed on the console
  too; `2` and `3`: callers outside the `torch` package only, in the file only. Any other value
  opens the file and writes nothing (the toolkit's severity stays "disabled").
- The file: `$HABANA_LOGS/gpu_migration_logs/<YYYY-MM-DD>/<HH-MM-SS>/gpu_migration_<pid>.log`
  (`./gpu_migration_logs/...` when `HABANA_LOGS` is unset), announced on stdout with
  `gpu migration log will be saved to <path>`.

An entry (Model-References' `gpu_migration_logs/*.log` show the same):

    [2023-03-17 11:23:20] main.py:103
        [context]:     use_cuda = not args.no_cuda and torch.cuda.is_available()
        [hpu_match]: torch.cuda.is_available() --> torch.hpu.is_available()

`hpu_match` (mapped to the HPU equivalent), `hpu_modified` (an HPU-specific implementation) or
`hpu_mismatch` (no HPU equivalent: a no-op). The caller is the first frame outside the
migration itself; an entry is written once per (file, line, message). DIFFERS: the console copy
is coloured only on a terminal (the toolkit always colours it).
"""

from __future__ import annotations

import linecache
import os
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any, Final, Literal, TextIO

ApiType = Literal["hpu_match", "hpu_modified", "hpu_mismatch"]

LEVEL_VAR: Final = "GPU_MIGRATION_LOG_LEVEL"
_COLOURS: Final[dict[str, str]] = {
    "hpu_match": "\033[92m",
    "hpu_modified": "\033[93m",
    "hpu_mismatch": "\033[94m",
}
_INDENT: Final = " " * 4
_LONGEST: Final = 160


def format_args(args: Mapping[str, Any]) -> str:
    """The toolkit's argument list: `name=value, ` for each; a value whose text is long or spans
    lines (a dataset, a module) shows as its name (`dataset=dataset`, as the toolkit writes)."""
    return "".join(f"{k}={_shown(k, v)}, " for k, v in args.items())


def _shown(name: str, value: Any) -> str:
    text = str(value)
    return name if "\n" in text or len(text) > _LONGEST else text


def log_path(env: Mapping[str, str], when: datetime, pid: int) -> Path:
    """Where the toolkit writes the log of process `pid` started at `when`."""
    logs = env.get("HABANA_LOGS")
    base = Path(logs) if logs is not None else Path.cwd()
    day, clock = when.strftime("%Y-%m-%d %H-%M-%S").split(" ")
    return base / "gpu_migration_logs" / day / clock / f"gpu_migration_{pid}.log"


class MigrationLog:
    """The log of one emulated process (`open_from_env`), written as calls are migrated.

    Args:
        path: the log file, or None (no log).
        level: `GPU_MIGRATION_LOG_LEVEL` (1, 2 or 3; 0: the file is opened, nothing written).
        internal: folders whose frames are the migration's own (never the caller).
        torch_dir: the `torch` package folder (callers there are skipped at levels 2 and 3).
    """

    def __init__(self, path: Path | None, level: int, internal: tuple[str, ...], torch_dir: str):
        self.path = path
        self.level = level
        self.internal = (*internal, __file__)
        self.torch_dir = torch_dir
        self._seen: set[tuple[str, int, str]] = set()
        self._file: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            print(f"gpu migration log will be saved to {path}")
            self._file = path.open("w", encoding="utf8")

    @property
    def active(self) -> bool:
        """Whether entries are written (callers format their message only then)."""
        return self._file is not None and self.level > 0

    def caller(self) -> FrameType | None:
        """The frame that called the migrated API: the first outside the migration."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(self.internal):
            frame = frame.f_back  # type: ignore[assignment]
        return frame

    def caller_in_torch(self) -> bool:
        """Whether torch's own code (not the script) made the call being migrated."""
        frame = self.caller()
        return frame is not None and frame.f_code.co_filename.startswith(self.torch_dir)

    def write(self, api_type: ApiType, api: str, args: Mapping[str, Any], new_call: str) -> None:
        """One entry: `api(args) --> new_call`, attributed to the calling frame."""
        if not self.active or self._file is None:
            return
        frame = self.caller()
        if frame is None:
            return
        file, line = frame.f_code.co_filename, frame.f_lineno
        if self.level >= 2 and file.startswith(self.torch_dir):
            return
        message = f"[{api_type}]: {api}({format_args(args)}) --> {new_call}"
        key = (file, line, message)
        if key in self._seen:
            return
        self._seen.add(key)
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        context = linecache.getline(file, line) or "\n"
        head = f"[{stamp}] {file}:{line}\n{_INDENT}[context]: {context}"
        body = f"{_INDENT}{message}\n"
        self._file.write(head + body + "\n")
        self._file.flush()
        if self.level == 1:
            print(head)
            if sys.stdout.isatty():
                print(_COLOURS[api_type] + body + "\033[0m")
            else:
                print(body)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def open_from_env(
    env: Mapping[str, str], internal: tuple[str, ...], torch_dir: str
) -> MigrationLog:
    """The log `GPU_MIGRATION_LOG_LEVEL` asks for (none when it is unset)."""
    value = env.get(LEVEL_VAR)
    if value is None:
        return MigrationLog(None, 0, internal, torch_dir)
    level = int(value) if value in ("1", "2", "3") else 0
    return MigrationLog(log_path(env, datetime.now(), os.getpid()), level, internal, torch_dir)
