"""The loaded share of Perfetto mutants (issue 27): `python -m tools.perfetto_salvage [COUNT]`.

Runs the fuzz harness (`tests/fuzz`) on the Perfetto seeds only, without `hpuprof analyze`,
and prints how many mutants loaded, were refused with a clean error, or went wrong, by kind of
mutation. Same seed, same mutants: run it before and after a change to the reader."""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

from tests.fuzz import harness, seeds


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 200
    seed = int(argv[1]) if len(argv) > 1 else 27
    with tempfile.TemporaryDirectory(prefix="hpuprof-pf-") as scratch_dir:
        scratch = Path(scratch_dir)
        found = seeds.collect(scratch / "seeds", max_json_bytes=2_000_000)
        perfetto = [s for s in found if s.kind == "perfetto"]
        plan = harness.Plan(
            seeds=perfetto,
            scratch=scratch / "mutants",
            count=count,
            seed=seed,
            jobs=2,
            analyze=False,
            keep_failures=scratch / "failures",
        )
        results = harness.run(plan)
    by_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    total: collections.Counter[str] = collections.Counter()
    for rows in harness.by_mutant(results).values():
        outcome = harness.mutant_outcome(rows)
        by_kind[rows[0].mutation][outcome] += 1
        total[outcome] += 1
    mutants = sum(total.values())
    print(f"{mutants} Perfetto mutants of {len(perfetto)} seeds (fuzz seed {seed})")
    for kind, counts in sorted(by_kind.items()):
        print(f"  {kind:<16} {dict(counts)}")
    print(
        f"loaded {total['loaded']} of {mutants} ({100 * total['loaded'] / max(mutants, 1):.1f} %)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
