"""A pytest plugin: lightning-habana's DeepSpeed tests on PyPI's DeepSpeed.

`tools/run_lightning_habana_tests.py --pypi-deepspeed` loads it (`-p`) into the suite's pytest,
before the suite's modules import: `hpuprof.integrations.deepspeed.accept_pypi_deepspeed` waives
lightning-habana's pin on Habana's fork, so `HPUDeepSpeedStrategy` runs on the installed one.
"""

from __future__ import annotations

import pytest

from hpuprof.integrations.deepspeed import accept_pypi_deepspeed

_VERSION = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_VERSION] = accept_pypi_deepspeed()


def pytest_report_header(config: pytest.Config) -> str:
    return f"lightning-habana's DeepSpeed pin waived: PyPI DeepSpeed {config.stash[_VERSION]}"
