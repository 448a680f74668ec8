"""Derive `op_support.json` from the shared Gaudi op tables (run from the repo root).

    python runtime/hpusim/data/make_op_support.py [../shared/reference]

Inputs: `gaudi-op-support.csv` (bridge docs/Pytorch_Operators.rst, per-dtype support of 647
ops) and `gaudi-ops-missing-on-hpu.txt` (517 ATen overloads with no HPU kernel, bridge 1.16).
Output: {"missing": [overload names], "dtypes": {op: [supported dtype columns]}, "source": ...}.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

DTYPE_COLUMNS = ("FP32", "BF16", "FP16", "FP8", "INT64", "INT32", "INT16", "INT8", "BOOL")


def build(ref: Path) -> dict[str, object]:
    missing = sorted(
        line.strip()
        for line in (ref / "gaudi-ops-missing-on-hpu.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    dtypes: dict[str, list[str]] = {}
    with (ref / "gaudi-op-support.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            op = row["op"].strip()
            # the table lists python names (Tensor methods, functional, nn classes): keep
            # lower-case function names only; an op listed twice keeps the union of its dtypes
            if not op or not op[0].islower():
                continue
            supported = [c for c in DTYPE_COLUMNS if row[c].strip().lower() == "yes"]
            dtypes[op] = sorted(set(dtypes.get(op, [])) | set(supported), key=DTYPE_COLUMNS.index)
    return {
        "source": "gaudi-op-support.csv + gaudi-ops-missing-on-hpu.txt (bridge 1.16/1.19)",
        "missing": missing,
        "dtypes": dict(sorted(dtypes.items())),
    }


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    ref = Path(argv[0]) if argv else here.parents[2].parent / "shared" / "reference"
    (here / "op_support.json").write_text(json.dumps(build(ref), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
