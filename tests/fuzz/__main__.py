"""`python -m tests.fuzz [--count N] [--seed S] [--jobs J]`: a fuzz run, its figures printed.

    make fuzz                       # 10,000 mutants of every seed, 2 at a time
    python -m tests.fuzz --count 300 --max-json-mb 2   # about the size `make test` runs

Failing mutants are kept under --keep (default fuzz-failures/) with their index: the same
--seed and index make the same mutant again.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from tests.fuzz import harness, seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--max-json-mb", type=float, default=64.0, help="largest seed (MB)")
    parser.add_argument("--long-name-mb", type=float, default=64.0)
    parser.add_argument("--no-analyze", action="store_true")
    parser.add_argument(
        "--analyze-every", type=int, default=1, help="hpuprof analyze on every Nth loaded mutant"
    )
    parser.add_argument("--keep", type=Path, default=Path("fuzz-failures"))
    parser.add_argument("--results", type=Path, help="write every result as JSON lines here")
    parser.add_argument(
        "--seconds",
        type=float,
        help="start no mutant after this many seconds (the run is a prefix of the seeded order)",
    )
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hpuprof-fuzz-") as scratch_dir:
        scratch = Path(scratch_dir)
        plan = harness.Plan(
            seeds=seeds.collect(scratch / "seeds", max_json_bytes=int(options.max_json_mb * 1e6)),
            scratch=scratch / "mutants",
            count=options.count,
            seed=options.seed,
            jobs=options.jobs,
            timeout=options.timeout,
            analyze=not options.no_analyze,
            analyze_every=max(options.analyze_every, 1),
            long_name_max=int(options.long_name_mb * 1e6),
            keep_failures=options.keep,
            outside=seeds.bait(scratch),
            deadline=None if options.seconds is None else time.monotonic() + options.seconds,
        )
        kinds = sorted({s.kind for s in plan.seeds})
        print(
            f"{len(plan.seeds)} seeds ({', '.join(kinds)}); {plan.count} mutants, seed {plan.seed}"
        )
        start = time.monotonic()
        out = open(options.results, "w") if options.results is not None else None  # noqa: SIM115
        mutants = set()

        def progress(done: int, latest: list[harness.Result]) -> None:
            for result in harness.failures(latest):
                print(f"  #{result.index} {harness._short(result)}", flush=True)
            for result in latest:
                mutants.add(result.index)
                if out is not None:
                    out.write(json.dumps(asdict(result)) + "\n")
            if out is not None:
                out.flush()
            if len(mutants) % 250 == 0 and latest:
                print(f"  {len(mutants)} mutants, {time.monotonic() - start:.0f} s", flush=True)

        try:
            results = harness.run(plan, progress)
        finally:
            if out is not None:
                out.close()
        elapsed = time.monotonic() - start
    print(harness.summary(results))
    ran = len({r.index for r in results})
    print(f"{ran} of {plan.count} mutants in {elapsed:.0f} s with {plan.jobs} jobs")
    return 1 if any(True for _ in harness.failures(results)) else 0


if __name__ == "__main__":
    sys.exit(main())
