"""`tools/run_bridge_tests.py`'s own parts: the ids it takes from pytest's collection, and the
address-space cap that turns a test's host allocation past the host's RAM into an error of that
test instead of the kernel killing the whole one-worker run."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"

# the shape of `pytest -q --collect-only --continue-on-collection-errors` on the bridge's any_mode
COLLECTED = """any_mode/test_a.py::test_one[int8-[2x2]]
any_mode/test_a.py::TestB::test_two[shape=(2, 3)-dim=0]

==================================== ERRORS ====================================
______________ ERROR collecting any_mode/test_hpu_foreach_ops.py _______________
any_mode/test_hpu_foreach_ops.py::test_foreach_binary_tensor: in "parametrize" expected a \
sequence of values, for a single value use a one-element tuple like ('value',), got int:
  5
=========================== short test summary info ============================
ERROR any_mode/test_hpu_foreach_ops.py - Failed: any_mode/test_hpu_foreach_ops.py::test_f...
2 tests collected, 1 error in 3.26s
"""


@pytest.fixture
def tool(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("run_bridge_tests")


def test_collected_ids_are_the_first_block_not_the_errors_section(tool: ModuleType) -> None:
    assert tool.collected_ids(COLLECTED) == [
        "any_mode/test_a.py::test_one[int8-[2x2]]",
        "any_mode/test_a.py::TestB::test_two[shape=(2, 3)-dim=0]",
    ]


def test_an_allocation_past_the_cap_is_an_error_of_the_process_not_a_kill(
    tool: ModuleType,
) -> None:
    ram = tool.os.sysconf("SC_PAGE_SIZE") * tool.os.sysconf("SC_PHYS_PAGES")
    # a mapping of 0.6 of the RAM, never touched: allowed uncapped (the control), not under 0.5
    code = f"""
import mmap
try:
    mmap.mmap(-1, {int(0.6 * ram)})
except OSError:
    raise SystemExit(7)
"""
    uncapped = subprocess.run([sys.executable, "-c", code], check=False)
    assert uncapped.returncode == 0
    capped = subprocess.run(
        [sys.executable, "-c", code], preexec_fn=tool.address_space_cap(0.5), check=False
    )
    assert capped.returncode == 7


def test_junit_cases_give_back_the_node_ids_pytest_runs(tool: ModuleType) -> None:
    cases = tool.ET.fromstring(
        '<testsuite><testcase classname="eager.test_eager_index_put.TestHpuIndexPutSelect"'
        ' name="test_index_put[bfloat16]" file="eager/test_eager_index_put.py"/>'
        '<testcase classname="any_mode.test_hpu_abs" name="test_hpu_abs[int32-shape0]"'
        ' file="any_mode/test_hpu_abs.py"/></testsuite>'
    )
    assert [tool.node_id(case) for case in cases] == [
        "eager/test_eager_index_put.py::TestHpuIndexPutSelect::test_index_put[bfloat16]",
        "any_mode/test_hpu_abs.py::test_hpu_abs[int32-shape0]",
    ]
