"""`tools/run_lightning_habana_tests.py`'s own parts: the emulated server's cards apart from the
suite's `--hpus`, and its refusal of card counts no Gaudi server has."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


@pytest.fixture
def tool(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("run_lightning_habana_tests")


def test_the_emulator_counts_the_servers_cards(tool: ModuleType) -> None:
    """`--cards N` is the emulator's device count (LOCAL_WORLD_SIZE, as `record --cards`
    sets it); one card leaves the environment as it is."""
    env = {"PATH": "/bin"}
    assert tool.on_cards(env, 1) == env
    assert tool.on_cards(env, 2) == {"PATH": "/bin", "LOCAL_WORLD_SIZE": "2"}
    assert env == {"PATH": "/bin"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--cards", "9"], "a Gaudi server has 1 to 8 cards"),
        (["--cards", "2", "--hpus", "3"], "a test can use 1 to --cards (2) cards"),
    ],
)
def test_card_counts_no_server_has_are_refused(args: list[str], said: str) -> None:
    tool = str(TOOLS / "run_lightning_habana_tests.py")
    done = subprocess.run(
        [sys.executable, tool, "--repo", "unused", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2 and said in done.stderr, done.stderr
