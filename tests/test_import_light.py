"""`import hpuprof` (and its loaders, analyses and CLI) never imports torch, dash or the emulator;
`hpuprof --help` imports none of the data libraries either."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "dash", "plotly", "hpusim", "hpudash")


def test_importing_the_library_pulls_in_nothing_heavy() -> None:
    code = (
        "import sys, hpuprof, hpuprof.trace.load, hpuprof.analysis, hpuprof.render.terminal, "
        "hpuprof.cli.main; hpuprof.cli.main.build_app(); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


HELP_MUST_NOT_LOAD = ("pandas", "numpy", "pyarrow", "torch", "dash", "plotly")
"""`hpuprof --help` lists the commands; none of these is needed for that (issue 27: start-up)."""


def test_top_level_help_lists_every_command_without_the_heavy_libraries() -> None:
    import click

    from hpuprof.cli.main import build_app

    group = build_app()
    with click.Context(group) as ctx:
        commands = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    marker = "--loaded--"
    code = (
        "import sys\nfrom hpuprof.cli.main import main\ncode = main(['--help'])\n"
        f"loaded = [m for m in {HELP_MUST_NOT_LOAD!r} if m in sys.modules]\n"
        f"print({marker!r} + ','.join(loaded))\nsys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    help_text, _, loaded = done.stdout.rpartition(marker)
    assert loaded.strip() == ""
    listed = help_text.split("Commands:", 1)[1].splitlines()
    for name, command in commands.items():
        line = next((row.split() for row in listed if row.split()[:1] == [name]), [])
        assert len(line) > 1, f"{name} is not listed with its help"
        assert command is not None
        full_help = " ".join((command.help or "").split())
        assert full_help.startswith(" ".join(line[1:]).rstrip(".")), f"{name}'s help differs"


def test_a_command_loads_no_other_command_module() -> None:
    """The group imports only the module of the command asked for (issue 27: start-up)."""
    from hpuprof.cli.main import COMMAND_MODULES

    code = (
        "import sys\nfrom hpuprof.cli.main import main\ncode = main(['info', '--help'])\n"
        f"print(','.join(m for m in {COMMAND_MODULES!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "hpuprof.cli.commands.info"
