"""A compiled scanner built from another version of the C source is not used."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hpuprof.trace import fastscan


@pytest.fixture
def fresh_module_lookup() -> Iterator[None]:
    fastscan._module.cache_clear()
    yield
    fastscan._module.cache_clear()


def test_stale_build_falls_back_to_pure_python(
    monkeypatch: pytest.MonkeyPatch, fresh_module_lookup: None
) -> None:
    scan = pytest.importorskip("hpuprof.trace._kineto_scan")
    assert scan.ABI == fastscan.ABI, "the built extension and fastscan.py disagree"
    monkeypatch.setattr(scan, "ABI", fastscan.ABI + 1)
    with pytest.warns(RuntimeWarning, match="another version of the compiled scanner"):
        assert not fastscan.available()
    assert fastscan.scan(b"") is None
