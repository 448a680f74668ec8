"""Run a user's script unchanged, in this process, under a started profiler (`hpuprof record`).

The script runs with `runpy` as `__main__`, with `sys.argv` set to its own argv, its
directory first on `sys.path` and its `__file__` absolute (as Python 3.9+ sets it for a script
named on the command line: scripts that import from `Path(__file__).parent.parent` rely on it),
like `python script.py args...` (one difference: `sys.argv[0]` is that absolute path too, where
python leaves it as typed; runpy sets it to the path it runs). In-process (rather than
a child with a bootstrap) keeps one process to profile and lets the emulator, enabled before
the script starts, serve its `import habana_frameworks...` unchanged. `python -m pkg.mod`
works too. Returns the exit status `python` would have returned.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from hpuprof.capture.run_end import exit_code_of
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


@dataclass(frozen=True)
class ScriptOutcome:
    """How the script ended.

    Args:
        exit_code: what `python script.py` would have exited with.
        error: the exception that ended it (SystemExit included), or None when it returned.
    """

    exit_code: int
    error: BaseException | None = None


def run_script(command: list[str]) -> ScriptOutcome:
    """Run `python script.py args` / `python -m mod args` in-process (see module doc)."""
    kind, target, argv = split_command(command)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = argv
    if kind == "script":
        target = str(Path(target).absolute())
        sys.path.insert(0, str(Path(target).resolve().parent))
    try:
        if kind == "module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        if done.code is not None and not isinstance(done.code, int):
            print(done.code, file=sys.stderr)
        return ScriptOutcome(exit_code_of(done), done)
    except KeyboardInterrupt as error:
        traceback.print_exc()
        return ScriptOutcome(130, error)
    except Exception as error:
        traceback.print_exc()
        return ScriptOutcome(1, error)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return ScriptOutcome(0)
