"""A CI-sized fuzz run (issue 13): a few hundred seeded mutants of the shared and sample traces
through every loader path, each in a forked child with a 30 CPU-s (120 s wall) and 4 GB limit. Every mutant
loads (correctly: see `mutate.Expect`) or gives one clean TraceFormatError, and `hpuprof analyze`
runs on every one that loads without a traceback. The long run is `make fuzz` (10,000+).

Bounded in time: no new mutant starts after FUZZ_SECONDS, 100 s (the seeded order is fixed, so a
slower machine runs a prefix of the same mutants)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.fuzz import harness, seeds

COUNT = int(os.environ.get("HPUPROF_FUZZ_COUNT", "300"))
FUZZ_SECONDS = float(os.environ.get("HPUPROF_FUZZ_SECONDS", "100"))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fuzzed_traces_load_or_fail_cleanly(tmp_path: Path) -> None:
    plan = harness.Plan(
        seeds=seeds.collect(tmp_path / "seeds", max_json_bytes=2_000_000),
        scratch=tmp_path / "mutants",
        count=COUNT,
        seed=int(os.environ.get("HPUPROF_FUZZ_SEED", "13")),
        jobs=2,
        long_name_max=2_000_000,
        keep_failures=tmp_path / "failures",
        outside=seeds.bait(tmp_path),
        deadline=time.monotonic() + FUZZ_SECONDS,
    )
    results = harness.run(plan)
    print(harness.summary(results))
    ran = {r.index for r in results}
    assert len(ran) >= min(COUNT, 20), f"only {len(ran)} mutants ran in {FUZZ_SECONDS:.0f} s"
    # gzip seeds are the shared traces (../shared): without them no gzip mutant can be made
    kinds = {seed.kind for seed in plan.seeds}
    wanted = {"json-compiled", "json-pure", "perfetto"} | ({"gzip"} & kinds)
    assert {r.path for r in results} >= wanted
    failed = [f"#{r.index} {harness._short(r)} ({r.file})" for r in harness.failures(results)]
    assert not failed, "\n".join(failed)
    assert not [r.index for r in results if r.outcome == "not_made"], "the mutator failed"
