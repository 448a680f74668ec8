"""What click's report of a usage mistake looks like, for the tests of every command."""

from __future__ import annotations


def usage_error(err: str, command: str = "") -> str:
    """The `Error: ...` line of click's usage message for `hpuprof COMMAND` in `err`.

    Fails unless `err` is that message: the command's usage line, the `--help` hint, the error,
    and no traceback or internal error.
    """
    prog = f"hpuprof {command}".rstrip()
    lines = err.strip().splitlines()
    assert lines and lines[0].startswith(f"Usage: {prog} "), err
    assert lines[1] == f"Try '{prog} --help' for help.", err
    assert lines[-1].startswith("Error: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[-1]
