"""Run a user's script unchanged, in this process, under a started profiler (`hpuprof record`).

The script runs with `runpy` as `__main__`, with `sys.argv` set to its own argv and its
directory first on `sys.path`, exactly like `python script.py args...`. In-process (rather than
a child with a bootstrap) keeps one process to profile and lets the emulator, enabled before
the script starts, serve its `import habana_frameworks...` unchanged. `python -m pkg.mod`
works too. Returns the exit status `python` would have returned.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from pathlib import Path

from hpuprof.errors import UsageError


def split_command(command: list[str]) -> tuple[str, str, list[str]]:
    """(kind "script" | "module", target, argv for the target) from `python x.py args`."""
    args = list(command)
    if args and Path(args[0]).name.startswith("python") and not args[0].endswith(".py"):
        args = args[1:]
    if not args:
        raise UsageError("nothing to record: give a command after --, e.g. -- python train.py")
    if args[0] == "-m":
        if len(args) < 2:
            raise UsageError("-m needs a module name")
        return "module", args[1], args[1:]
    script = Path(args[0])
    if not script.is_file():
        raise UsageError(f"script not found: {script}")
    return "script", str(script), args


def run_command(command: list[str]) -> int:
    """Run `python script.py args` / `python -m mod args` in-process; returns its exit code."""
    kind, target, argv = split_command(command)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = argv
    if kind == "script":
        sys.path.insert(0, str(Path(target).resolve().parent))
    try:
        if kind == "module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0
