"""Derive `op_support.json` from the shared Gaudi op tables and the 1.19 bridge (repo root).

    python runtime/hpusim/data/make_op_support.py [../shared/reference] [--bridge PATH]

Inputs: `gaudi-op-support.csv` (bridge 1.16 docs/Pytorch_Operators.rst, per-dtype support of 647
ops), `gaudi-ops-missing-on-hpu.txt` (517 ATen overloads with no HPU kernel, bridge 1.16), and
two files beside this script that `--bridge PATH` (a gaudi-pytorch-bridge checkout or git dir)
re-extracts from the 1.19 source:

- `bridge_registered_ops.txt`: the operator names 1.19 registers for the HPU key (the keys of
  its `scripts/hpu_op.yaml` and its `m.impl("...")` registrations). An overload in the 1.16
  missing list that 1.19 registers is no longer missing (161 of them: `_foreach_*`, `isin`, ...).
- `bridge_op_dtypes.json`: the dtype checks the 1.19 source states, per overload and Gaudi
  generation: an `hpu_op.yaml` entry's `dtypes:` (ops without an `op_validator`; gen_op.py adds
  Double where Float is listed and Bool where Char is), checked on every plain Tensor input, on
  the promoted compute dtype (`promote_to_common_type` / `promote_int_to_float`) or per named
  argument; and the lazy hand-written kernels' `op_info` sets
  (`habana_kernels/kernel_input_checks.cpp`) for the ops whose `kernels_register.cpp` wrapper
  calls `FALLBACK_IF_UNSUPPORTED_OP*`. Ops validated by the shared layer (`op_validator`) are
  decided by the TPC kernel library, outside the bridge source: 1.19 is silent there and the
  1.16 table stays in use.
- `bridge_bool_cast_ops.txt`: the ops whose shared-layer validator casts a bool input on the
  device before its kernel (`if (dtype == c10::ScalarType::Bool) BoolCastSharedMeta(...)` in
  the validator or a function it returns, e.g. `AminAmaxSharedMeta` for amax/amin/aminmax), or
  runs the identity kernel for every integral input, bool included (`isIntegralType(dtype,
  true) ? "identity"`: `RoundingSharedMeta` for trunc / floor / ceil): bool is supported there
  whatever the 1.16 table says.
- `bridge_int_to_float_ops.txt`: the ops whose shared-layer validator checks its kernels at
  the compute dtype of integers promoted to float (`get_compute_dtype(...,
  kPromoteIntToFloat)`, e.g. `XlogYSharedMeta`): integer and bool inputs are supported there.
- `bridge_small_int_ops.txt`: the ops whose validator checks int8 / bool inputs as int32
  (`FillCumSumProdSharedMeta`, `IsFiniteInfNanSharedMeta`): int8 and bool are supported there.
- `bridge_op_guids.json`: the TPC kernel (`guid:`) each `hpu_op.yaml` entry runs, by the name
  the 1.16 table uses (`sub.Tensor` -> `sub`). A kernel's dtypes do not depend on which op
  launches it, so ops of the 1.16 table that run the same kernel get the union of the dtypes the
  table gives any of them: the table says `sub` has no int32 while `add` (the same
  `binary_with_alpha_fwd`, whose params the bridge fills for integral inputs) has it.

- `bridge_tested_dtypes.txt` (kept by hand, each line citing its test): dtypes the 1.19
  bridge's own `tests/pytest_working` run on the device with CPU fallback forbidden (its
  conftest sets `PT_HPU_PLACE_ON_CPU=none`) for ops whose shared-layer validator leaves the
  dtype to the TPC kernel library, where the 1.16 table lacks them (`ge` on int8).

Output: {"source", "missing": [overload names], "dtypes": {op: [1.16 dtype columns]},
"widened_by_kernel": {op: [columns added from its kernel's other ops]},
"bool_cast_on_device": [ops whose validator casts bool inputs],
"tested_on_device": {op: [columns the bridge's tests run on the device]},
"dtypes_1_19": {overload: check}}. `--compare` prints how many op/dtype pairs 1.19 decides
differently from 1.16.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REGISTERED = "bridge_registered_ops.txt"
BRIDGE_DTYPES = "bridge_op_dtypes.json"
BRIDGE_GUIDS = "bridge_op_guids.json"
BRIDGE_BOOL_CAST = "bridge_bool_cast_ops.txt"
BRIDGE_INT_TO_FLOAT = "bridge_int_to_float_ops.txt"
BRIDGE_SMALL_INT = "bridge_small_int_ops.txt"
BRIDGE_TESTED = "bridge_tested_dtypes.txt"

DTYPE_COLUMNS = ("FP32", "BF16", "FP16", "FP8", "INT64", "INT32", "INT16", "INT8", "BOOL")
INTEGRAL_COLUMNS = ("INT64", "INT32", "INT16", "INT8", "BOOL")

# the bridge's at::ScalarType spellings -> torch dtype names
SCALAR_TYPES = {
    "Float": "float32",
    "Double": "float64",
    "BFloat16": "bfloat16",
    "Half": "float16",
    "Float8_e5m2": "float8_e5m2",
    "Float8_e4m3fn": "float8_e4m3fn",
    "Long": "int64",
    "Int": "int32",
    "Short": "int16",
    "Char": "int8",
    "Byte": "uint8",
    "Bool": "bool",
}
GENERATIONS = {"Gaudi": "gaudi", "Gaudi2": "gaudi2", "Gaudi3": "gaudi3"}
# the torch dtypes compared by --compare, with the 1.16 column each is read from
COMPARED = {
    "float32": "FP32",
    "bfloat16": "BF16",
    "float16": "FP16",
    "float8_e5m2": "FP8",
    "float8_e4m3fn": "FP8",
    "int64": "INT64",
    "int32": "INT32",
    "int16": "INT16",
    "int8": "INT8",
    "uint8": "INT8",
    "bool": "BOOL",
}


def _git(bridge: Path) -> Callable[..., str]:
    git_dir = bridge if (bridge / "HEAD").is_file() else bridge / ".git"

    def run(*args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True
        ).stdout

    return run


def extract_registered(bridge: Path) -> list[str]:
    """Operator names the bridge checkout registers for HPU (hpu_op.yaml keys, m.impl calls)."""
    git = _git(bridge)
    yaml_keys = re.findall(
        r"^([A-Za-z_][\w.]*):\s*$", git("show", "HEAD:scripts/hpu_op.yaml"), re.M
    )
    impls = re.findall(r'm\.impl\("([^"]+)"', git("grep", "-h", "m.impl(", "HEAD", "--", "*.cpp"))
    return sorted(set(yaml_keys) | set(impls))


def _torch_names(scalar_types: list[str], implied: bool) -> list[str]:
    """Bridge dtype names -> torch names; `implied`: gen_op.py's Float => Double, Char => Bool."""
    names = list(scalar_types)
    if implied:
        if "Float" in names and "Double" not in names:
            names.append("Double")
        if "Char" in names and "Bool" not in names:
            names.append("Bool")
    unknown = [n for n in names if n not in SCALAR_TYPES]
    if unknown:
        raise ValueError(f"unknown bridge dtype(s) {unknown}")
    return [SCALAR_TYPES[n] for n in names]


def _yaml_check(name: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    """The dtype check gen_op.py generates for one hpu_op.yaml entry, or None (shared layer)."""
    dtypes = spec.get("dtypes")
    if dtypes is None or spec.get("op_validator") or spec.get("custom_op_schema"):
        return None
    promote_common = spec.get("promote_to_common_type")
    promote_float = spec.get("promote_int_to_float")
    per_gen: dict[str, Any]
    if isinstance(dtypes, list):
        per_gen = {"all": dtypes}
    elif isinstance(dtypes, dict) and set(dtypes) <= set(GENERATIONS):
        per_gen = {GENERATIONS[g]: v for g, v in dtypes.items()}
    elif isinstance(dtypes, dict):
        per_gen = {"all": dtypes}  # keyed by argument name, for every generation
    else:
        raise ValueError(f"hpu_op.yaml {name}: unexpected dtypes {dtypes!r}")
    args: list[str] = []
    sets: dict[str, list[list[str]]] = {}
    for gen, value in per_gen.items():
        if isinstance(value, list):
            sets[gen] = [_torch_names(value, True)]
        else:  # {argument: [dtypes]}
            names = list(value)
            if args and names != args:
                raise ValueError(f"hpu_op.yaml {name}: arguments differ across generations")
            args = names
            sets[gen] = [_torch_names(value[a], True) for a in names]
    if promote_common or promote_float:
        if args:
            raise ValueError(f"hpu_op.yaml {name}: per-argument dtypes with type promotion")
        kind = "promoted"
        args = list(promote_common or promote_float or [])
    else:
        kind = "per_arg" if args else "inputs"
    return {
        "kind": kind,
        "args": args,
        "promote": "common" if promote_common else ("int_to_float" if promote_float else ""),
        "lazy_only": False,
        "source": "scripts/hpu_op.yaml",
        "dtypes": sets,
    }


def _macro_calls(text: str, macro: str) -> list[tuple[str, list[str]]]:
    """(macro name, top-level arguments) of each call of a macro whose name starts `macro`."""
    calls = []
    for m in re.finditer(rf"\b({macro}\w*)\(", text):
        depth, i, start, args = 1, m.end(), m.end(), []
        while depth:
            c = text[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            if (c == "," and depth == 1) or depth == 0:
                args.append(" ".join(text[start:i].split()))
                start = i + 1
            i += 1
        calls.append((m.group(1), args))
    return calls


def _op_info(checks_cpp: str) -> dict[str, list[list[str]]]:
    """kernel_input_checks.cpp's `op_info`: op key -> per-position dtype sets."""
    body = checks_cpp[checks_cpp.index("op_info = {") : checks_cpp.index("hpu_check_inputs_impl(")]
    table = {}
    for m in re.finditer(r'\{\s*"(\w+)",\s*\{((?:\s*\{[^{}]*\},?)+)\s*\},?\s*\}', body):
        table[m.group(1)] = [
            re.findall(r"ScalarType::(\w+)", s) for s in re.findall(r"\{([^{}]*)\}", m.group(2))
        ]
    if not table:
        raise ValueError("kernel_input_checks.cpp: no op_info entries found")
    return table


def _manual_checks(register_cpp: str, checks_cpp: str) -> dict[str, dict[str, Any]]:
    """The lazy hand-written wrappers' `FALLBACK_IF_UNSUPPORTED_OP*(op, PARAMS1(tensors), ...)`
    checks (`hpu_check_inputs_impl`: the i-th defined tensor against the i-th set, no implied
    dtypes), keyed by the ATen overload the macro falls back with."""
    table = _op_info(checks_cpp)
    out = {}
    for macro, args in _macro_calls(register_cpp, "FALLBACK_IF_UNSUPPORTED_OP"):
        if macro.endswith("_RT") or "_RT_" in macro:
            args = args[1:]  # the result dtype comes first
        key = args[0]
        params = re.fullmatch(r"PARAMS1\((.*)\)", args[1])
        if params is None:
            raise ValueError(f"kernels_register.cpp: {macro}({key}, ...) has no PARAMS1")
        if macro.endswith("_O"):
            overload = f"{key}.{args[3]}"
        elif key.endswith("_out"):
            overload = f"{key[: -len('_out')]}.out"
        else:
            overload = key
        out[overload] = {
            "kind": "positions",
            "args": [p.strip() for p in params.group(1).split(",")],
            "promote": "",
            "lazy_only": True,
            "source": "habana_kernels/kernel_input_checks.cpp",
            "dtypes": {"all": [_torch_names(s, False) for s in table[key]]},
        }
    return out


def extract_dtypes(bridge: Path) -> dict[str, dict[str, Any]]:
    """The dtype checks the bridge source states, per ATen overload (see the module doc)."""
    import yaml

    git = _git(bridge)
    spec = yaml.safe_load(git("show", "HEAD:scripts/hpu_op.yaml"))
    checks = {}
    for name, entry in spec.items():
        check = _yaml_check(name, entry) if isinstance(entry, dict) else None
        if check is not None:
            checks[name] = check
    manual = _manual_checks(
        git("show", "HEAD:habana_kernels/kernels_register.cpp"),
        git("show", "HEAD:habana_kernels/kernel_input_checks.cpp"),
    )
    for name, check in manual.items():
        checks.setdefault(name, check)
    return dict(sorted(checks.items()))


def extract_guids(bridge: Path) -> dict[str, str]:
    """The TPC kernel each `hpu_op.yaml` entry runs, by its name before the overload (the first
    entry of a name wins; `guid:` values that are not plain names are skipped)."""
    import yaml

    spec = yaml.safe_load(_git(bridge)("show", "HEAD:scripts/hpu_op.yaml"))
    guids: dict[str, str] = {}
    for name, entry in spec.items():
        guid = entry.get("guid") if isinstance(entry, dict) else None
        if isinstance(guid, str) and re.fullmatch(r"\w+", guid):
            guids.setdefault(name.split(".", 1)[0], guid)
    return dict(sorted(guids.items()))


_FUNCTION = re.compile(r"^SharedMetaDataVector (\w+)\(.*?^}", re.M | re.S)
_BOOL_CAST = re.compile(
    r"==\s*(?:c10::ScalarType::Bool|at::kBool)\s*\)\s*\{?\s*[^;]*?BoolCastSharedMeta"
    # an integral input, bool included, runs the identity kernel (RoundingSharedMeta:
    # trunc / floor / ceil of an integer is the integer)
    r"|isIntegralType\(\s*\w+\s*,\s*true\s*\)\s*\?\s*\"identity\""
)


_INT_TO_FLOAT = re.compile(r"get_compute_dtype\([^;]*kPromoteIntToFloat")
_SMALL_INT_TO_INT32 = re.compile(
    r"(?:ScalarType::Char|isIntegralType\(\s*\w+\s*,\s*true\s*\))[^;{]*\)\s*\{?\s*"
    r"\w+\s*=\s*(?:c10|at)::ScalarType::Int\s*;"
)


def extract_bool_cast_ops(bridge: Path) -> list[str]:
    """Ops (by the 1.16 table's names) whose validator casts a bool input on the device."""
    return _ops_whose_validator_matches(bridge, _BOOL_CAST)


def extract_int_to_float_ops(bridge: Path) -> list[str]:
    """Ops (by the 1.16 table's names) whose validator checks its kernels at the compute dtype
    of integers promoted to float (`get_compute_dtype(..., kPromoteIntToFloat)`, e.g.
    `XlogYSharedMeta`): integer and bool inputs run on the device as floats."""
    return _ops_whose_validator_matches(bridge, _INT_TO_FLOAT)


def extract_small_int_ops(bridge: Path) -> list[str]:
    """Ops (by the 1.16 table's names) whose validator checks int8 and bool inputs as int32
    (`FillCumSumProdSharedMeta`: Bool / Char / Byte -> Int; `IsFiniteInfNanSharedMeta`):
    int8 and bool inputs run on the device."""
    return _ops_whose_validator_matches(bridge, _SMALL_INT_TO_INT32)


def _ops_whose_validator_matches(bridge: Path, pattern: re.Pattern[str]) -> list[str]:
    import yaml

    git = _git(bridge)
    sources = git("show", *(f"HEAD:{p}" for p in _validator_sources(git)))
    bodies = {m.group(1): m.group(0) for m in _FUNCTION.finditer(sources)}
    casting = {name for name, body in bodies.items() if pattern.search(body)}
    casting |= {
        name
        for name, body in bodies.items()
        if any(re.search(rf"\b{callee}\(", body) for callee in casting - {name})
    }
    spec = yaml.safe_load(git("show", "HEAD:scripts/hpu_op.yaml"))
    return sorted(
        {
            name.split(".", 1)[0]
            for name, entry in spec.items()
            if isinstance(entry, dict) and entry.get("op_validator") in casting
        }
    )


def _validator_sources(git: Callable[..., str]) -> list[str]:
    listed = git("ls-tree", "-r", "--name-only", "HEAD", "hpu_ops")
    return [p for p in listed.splitlines() if p.endswith(".cpp")]


def widen_by_kernel(dtypes: dict[str, list[str]], guids: dict[str, str]) -> dict[str, list[str]]:
    """`dtypes` where each op of a kernel shared by several ops of the table has the union of
    their dtypes; returns what each widened op gained."""
    by_guid: dict[str, set[str]] = {}
    for op, supported in dtypes.items():
        if op in guids:
            by_guid.setdefault(guids[op], set()).update(supported)
    gained = {}
    for op, supported in dtypes.items():
        union = by_guid.get(guids.get(op, ""), set())
        extra = sorted(union - set(supported), key=DTYPE_COLUMNS.index)
        if extra:
            gained[op] = extra
            dtypes[op] = sorted(union, key=DTYPE_COLUMNS.index)
    return gained


def _read_lines(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    return {line.strip() for line in path.read_text().splitlines() if line.strip()}


def _read_tested(path: Path) -> dict[str, list[str]]:
    """op -> the dtype columns `bridge_tested_dtypes.txt` gives it (tab-separated: op, column,
    the test)."""
    tested: dict[str, list[str]] = {}
    for line in _read_lines(path):
        if not line.startswith("#"):
            op, column = line.split("\t")[:2]
            tested.setdefault(op, []).append(column)
    return {op: sorted(cols, key=DTYPE_COLUMNS.index) for op, cols in sorted(tested.items())}


def build(ref: Path) -> dict[str, Any]:
    here = Path(__file__).resolve().parent
    registered = _read_lines(here / REGISTERED)
    bridge_dtypes_file = here / BRIDGE_DTYPES
    bridge_dtypes = (
        json.loads(bridge_dtypes_file.read_text()) if bridge_dtypes_file.is_file() else {}
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
    guids_file = here / BRIDGE_GUIDS
    guids = json.loads(guids_file.read_text()) if guids_file.is_file() else {}
    tested = _read_tested(here / BRIDGE_TESTED)  # the kernel's dtypes: before the widening
    for op, columns in tested.items():
        if op in dtypes:
            dtypes[op] = sorted({*dtypes[op], *columns}, key=DTYPE_COLUMNS.index)
    widened = widen_by_kernel(dtypes, guids)
    bool_cast = sorted(_read_lines(here / BRIDGE_BOOL_CAST))
    for op in bool_cast:
        if op in dtypes and "BOOL" not in dtypes[op]:
            dtypes[op] = sorted([*dtypes[op], "BOOL"], key=DTYPE_COLUMNS.index)
    small_ints = sorted(_read_lines(here / BRIDGE_SMALL_INT))
    for op in small_ints:
        if op in dtypes:
            dtypes[op] = sorted({*dtypes[op], "INT8", "BOOL"}, key=DTYPE_COLUMNS.index)
    int_to_float = sorted(_read_lines(here / BRIDGE_INT_TO_FLOAT))
    for op in int_to_float:
        if op in dtypes:
            dtypes[op] = sorted({*dtypes[op], *INTEGRAL_COLUMNS}, key=DTYPE_COLUMNS.index)
    return {
        "source": (
            "gaudi-op-support.csv + gaudi-ops-missing-on-hpu.txt (bridge 1.16) less the ops the "
            "1.19 bridge registers for HPU (bridge_registered_ops.txt); dtypes_1_19: the dtype "
            "checks the 1.19 source states (bridge_op_dtypes.json), which win over the 1.16 "
            "dtypes where present; ops of the 1.16 table that run the same TPC kernel "
            "(bridge_op_guids.json) share the union of their dtypes (widened_by_kernel); ops "
            "whose validator casts bool on the device accept bool (bool_cast_on_device); ops "
            "whose validator promotes integers to float accept them (int_to_float_on_device); "
            "ops whose validator checks int8 / bool as int32 accept them "
            "(small_int_as_int32_on_device); dtypes the 1.19 bridge's own tests run on the "
            "device with CPU fallback forbidden are supported (tested_on_device)"
        ),
        "widened_by_kernel": widened,
        "bool_cast_on_device": bool_cast,
        "int_to_float_on_device": int_to_float,
        "small_int_as_int32_on_device": small_ints,
        "tested_on_device": tested,
        "missing": missing,
        "dtypes": dict(sorted(dtypes.items())),
        "dtypes_1_19": bridge_dtypes,
    }


def _base_name(overload: str) -> str:
    name = overload.split(".", 1)[0]
    return name.rstrip("_") if not name.startswith("_") else name


def _checks_a_tensor(overload: str, check: dict[str, Any]) -> bool:
    """False for an `inputs` check of an op with no plain Tensor argument (a TensorList op such
    as `_foreach_floor_`): gen_op.py generates no FALLBACK_IF_UNSUPPORTED_DTYPE for it."""
    if check["kind"] != "inputs":
        return True
    import torch

    name, _, variant = overload.partition(".")
    op = getattr(getattr(torch.ops.aten, name, None), variant or "default", None)
    return op is None or any(str(a.type) == "Tensor" for a in op._schema.arguments)


def compare(data: dict[str, Any], generation: str = "gaudi2") -> list[tuple[str, str, str]]:
    """(overload, dtype, `1.19 only` | `1.16 only`) for each op/dtype pair whose support the
    1.19 check states differently from the 1.16 table (no 1.16 row: supported). The dtype is
    checked against the check's first set (the data input of a per-argument check), as the
    emulator reads int64 by default (as int32 unless PT_ENABLE_INT64_SUPPORT=1); a check that
    applies to no tensor supports every dtype."""
    changed = []
    for overload, check in data["dtypes_1_19"].items():
        sets = check["dtypes"].get(generation, check["dtypes"].get("all"))
        if sets is None:
            continue
        if not _checks_a_tensor(overload, check):
            sets = [list(SCALAR_TYPES.values())]
        new = set(sets[0])
        row = data["dtypes"].get(_base_name(overload))
        for dtype, column in COMPARED.items():
            if dtype == "int64":
                new_ok = "int64" in new or ("int32" in new and check["kind"] != "positions")
                old_ok = row is None or "INT32" in row
            else:
                new_ok = dtype in new
                old_ok = row is None or column in row
            if new_ok != old_ok:
                changed.append((overload, dtype, "1.19 only" if new_ok else "1.16 only"))
    return changed


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    do_compare = "--compare" in argv
    argv = [a for a in argv if a != "--compare"]
    if "--bridge" in argv:
        i = argv.index("--bridge")
        bridge = Path(argv[i + 1])
        (here / REGISTERED).write_text("\n".join(extract_registered(bridge)) + "\n")
        (here / BRIDGE_DTYPES).write_text(json.dumps(extract_dtypes(bridge), indent=1) + "\n")
        (here / BRIDGE_GUIDS).write_text(json.dumps(extract_guids(bridge), indent=1) + "\n")
        (here / BRIDGE_BOOL_CAST).write_text("\n".join(extract_bool_cast_ops(bridge)) + "\n")
        int_to_float = extract_int_to_float_ops(bridge)
        (here / BRIDGE_INT_TO_FLOAT).write_text("\n".join(int_to_float) + "\n")
        small_ints = extract_small_int_ops(bridge)
        (here / BRIDGE_SMALL_INT).write_text("\n".join(small_ints) + "\n")
        argv = argv[:i] + argv[i + 2 :]
    ref = Path(argv[0]) if argv else here.parents[2].parent / "shared" / "reference"
    data = build(ref)
    (here / "op_support.json").write_text(json.dumps(data, indent=1) + "\n")
    if do_compare:
        changed = compare(data)
        listed = [c for c in changed if _base_name(c[0]) in data["dtypes"]]
        gained = sum(1 for c in changed if c[2] == "1.19 only")
        print(
            f"{len(data['dtypes_1_19'])} overloads with a 1.19 dtype check; on gaudi2 "
            f"{len(changed)} op/dtype pairs of {len({c[0] for c in changed})} overloads differ "
            f"from 1.16 ({gained} supported only by 1.19, {len(changed) - gained} only by 1.16); "
            f"{len(listed)} pairs of {len({c[0] for c in listed})} overloads where the 1.16 "
            f"table has a row, the rest where it has none (read as every dtype supported)"
        )
        for op, dtype, side in changed:
            print(f"  {op}\t{dtype}\t{side}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
