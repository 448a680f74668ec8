"""Derive `op_support.json` from the shared Gaudi op tables (run from the repo root).

    python runtime/hpusim/data/make_op_support.py [../shared/reference] [--bridge PATH]

Inputs: `gaudi-op-support.csv` (bridge docs/Pytorch_Operators.rst, per-dtype support of 647
ops), `gaudi-ops-missing-on-hpu.txt` (517 ATen overloads with no HPU kernel, bridge 1.16) and
`bridge_registered_ops.txt` beside this script: the operator names the 1.19 bridge registers for
the HPU key (the keys of its `scripts/hpu_op.yaml` and its `m.impl("...")` registrations), which
`--bridge PATH` (a gaudi-pytorch-bridge checkout or git dir) re-extracts. An overload in the
1.16 missing list that 1.19 registers is no longer missing (161 of them: `_foreach_*`,
`isin`, `bincount`, `scatter.reduce`, `_aminmax`, ...).
Output: {"missing": [overload names], "dtypes": {op: [supported dtype columns]}, "source": ...}.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

REGISTERED = "bridge_registered_ops.txt"


def extract_registered(bridge: Path) -> list[str]:
    """Operator names the bridge checkout registers for HPU (hpu_op.yaml keys, m.impl calls)."""
    git_dir = bridge if (bridge / "HEAD").is_file() else bridge / ".git"

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True
        ).stdout

    yaml_keys = re.findall(
        r"^([A-Za-z_][\w.]*):\s*$", git("show", "HEAD:scripts/hpu_op.yaml"), re.M
    )
    impls = re.findall(r'm\.impl\("([^"]+)"', git("grep", "-h", "m.impl(", "HEAD", "--", "*.cpp"))
    return sorted(set(yaml_keys) | set(impls))


DTYPE_COLUMNS = ("FP32", "BF16", "FP16", "FP8", "INT64", "INT32", "INT16", "INT8", "BOOL")


def build(ref: Path) -> dict[str, object]:
    registered_file = Path(__file__).resolve().parent / REGISTERED
    registered = (
        {line.strip() for line in registered_file.read_text().splitlines() if line.strip()}
        if registered_file.is_file()
        else set()
    )
    missing = sorted(
        line.strip()
        for line in (ref / "gaudi-ops-missing-on-hpu.txt").read_text().splitlines()
        if line.strip()
        and not line.startswith("#")
        and line.strip().split("::", 1)[-1] not in registered
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
        "source": (
            "gaudi-op-support.csv + gaudi-ops-missing-on-hpu.txt (bridge 1.16) less the ops the "
            "1.19 bridge registers for HPU (bridge_registered_ops.txt)"
        ),
        "missing": missing,
        "dtypes": dict(sorted(dtypes.items())),
    }


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    if "--bridge" in argv:
        i = argv.index("--bridge")
        names = extract_registered(Path(argv[i + 1]))
        (here / REGISTERED).write_text("\n".join(names) + "\n")
        argv = argv[:i] + argv[i + 2 :]
    ref = Path(argv[0]) if argv else here.parents[2].parent / "shared" / "reference"
    (here / "op_support.json").write_text(json.dumps(build(ref), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
