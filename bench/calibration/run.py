"""Reproduce the calibration table of docs/device-model.md with `hpuprof predict`.

    python bench/calibration/run.py                 # every case (`make calibrate`)
    python bench/calibration/run.py --only g2-lat   # the cases whose id starts with that
    python bench/calibration/run.py --jobs 1        # one prediction at a time (default 2)
    python bench/calibration/run.py --markdown out.md --json out.json
    python bench/calibration/run.py --update-docs   # rewrite the table in docs/device-model.md

Each case runs its script under `hpuprof predict --format json` (fake tensors, the projected
timeline) once per listed run, turns the predicted step times into the published metric
(cases.py) and prints published, predicted and the error; then the mean, median and largest
absolute error over all rows and over the held-out rows (those no profile constant was fitted
on), and the device model's MME time beside Intel's MME cost model (mme_table.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import CASES, Case  # noqa: E402


def hpuprof() -> list[str]:
    exe = Path(sys.executable).with_name("hpuprof")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "hpuprof.cli"]


def predict(case: Case, args: list[str]) -> dict[str, object]:
    cmd = [
        *hpuprof(), "predict", "--device", case.device, "--format", "json",
        *case.predict_args, "--", sys.executable, str(HERE / case.script), *args,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=_child_env())
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-15:])
        raise RuntimeError(f"{case.id}: hpuprof predict failed ({done.returncode}):\n{tail}")
    data: dict[str, object] = json.loads(done.stdout)
    return data


def _child_env() -> dict[str, str]:
    """One math thread per prediction: `--jobs` predictions share the cores."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_case(case: Case) -> dict[str, object]:
    t0 = time.perf_counter()
    runs = {name: predict(case, args) for name, args in case.runs.items()}
    value = case.predict(runs)
    return {
        "id": case.id,
        "device": case.device,
        "cards": case.cards,
        "workload": case.workload,
        "precision": case.precision,
        "shape": case.shape,
        "published": case.published,
        "predicted": value,
        "unit": case.unit,
        "error_pct": 100.0 * (value - case.published) / case.published,
        "source": case.source,
        "script": f"bench/calibration/{case.script}",
        "note": case.note,
        "family": case.family,
        "held_out": not case.fitted,
        "wall_s": time.perf_counter() - t0,
        "step_times_s": {k: v.get("step_times_s") for k, v in runs.items()},
        "last_step_micro_s": {
            k: micro[-1]
            for k, v in runs.items()
            if (micro := v.get("micro_step_times_s")) and micro[-1]
        },
    }


def _run_or_report(case: Case) -> dict[str, object] | str:
    """`run_case(case)`, or the text of its failure."""
    try:
        return run_case(case)
    except RuntimeError as error:
        return f"FAILED {error}"


DOC = HERE.parent.parent / "docs" / "device-model.md"
BEGIN, END = "<!-- calibration-table:begin -->", "<!-- calibration-table:end -->"
"""The part of docs/device-model.md that `--update-docs` rewrites with this script's output."""


def _stats(rows: list[dict[str, object]]) -> str:
    errors = [abs(float(r["error_pct"])) for r in rows]  # type: ignore[arg-type]
    if not errors:
        return "none"
    worst = max(rows, key=lambda r: abs(float(r["error_pct"])))  # type: ignore[arg-type]
    return (
        f"{len(rows)} rows: mean {statistics.fmean(errors):.1f}%, median "
        f"{statistics.median(errors):.1f}%, max {max(errors):.1f}% ({worst['id']})"
    )


def summary(rows: list[dict[str, object]]) -> str:
    """Absolute errors over all rows and over the held-out rows, and the rows' coverage."""
    held = [r for r in rows if r.get("held_out", True)]
    non_llm = sum(r.get("family", "llm") != "llm" for r in rows)
    gaudi3 = sum(r["device"] == "gaudi3" for r in rows)
    within = sum(abs(float(r["error_pct"])) <= 25 for r in rows)  # type: ignore[arg-type]
    return (
        f"Absolute error, all rows: {_stats(rows)}. Held-out rows (no constant fitted on them): "
        f"{_stats(held)}. {non_llm} non-LLM rows, {gaudi3} Gaudi 3 rows; {within} of "
        f"{len(rows)} within 25%."
    )


def markdown(rows: list[dict[str, object]]) -> str:
    """The calibration table, its sources and the error summary, as the docs show them."""
    sources: list[str] = []
    for r in rows:
        if r["source"] not in sources:
            sources.append(str(r["source"]))
    head = (
        "| case | device | cards | workload | precision | batch / sequence | published | "
        "predicted | error | held out | source | script |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r['id']} | {r['device']} | {r['cards']} | {r['workload']} | {r['precision']} | "
        f"{r['shape']} | {_num(r['published'])} {r['unit']} | {_num(r['predicted'])} | "
        f"{float(r['error_pct']):+.1f}% | {'yes' if r.get('held_out', True) else 'no'} | "  # type: ignore[arg-type]
        f"[{sources.index(str(r['source'])) + 1}] | `{r['script']}` |"
        for r in rows
    ]
    refs = "\n".join(f"- [{i}] <{u}>" for i, u in enumerate(sources, 1))
    return f"{head}" + "\n".join(lines) + f"\n\nSources:\n\n{refs}\n\n{summary(rows)}\n"


def update_docs(rows: list[dict[str, object]], path: Path = DOC) -> None:
    """Replace the table between the BEGIN/END markers of docs/device-model.md (atomically)."""
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers to replace")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{markdown(rows)}{END}{tail}"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(new)
    tmp.replace(path)


def _children_cpu_s() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def _num(v: object) -> str:
    x = float(v)  # type: ignore[arg-type]
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _print_row(row: dict[str, object]) -> None:
    print(
        f"{row['id']!s:<30} published {_num(row['published']):>8} {row['unit']!s:<16} "
        f"predicted {_num(row['predicted']):>8}  error {float(row['error_pct']):+6.1f}%  "  # type: ignore[arg-type]
        f"({float(row['wall_s']):.0f} s)",  # type: ignore[arg-type]
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="run the cases whose id starts with this")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="print (and --update-docs) the rows a previous run wrote with --json; run nothing",
    )
    ap.add_argument(
        "--update-docs", action="store_true", help="rewrite the table in docs/device-model.md"
    )
    ap.add_argument("--jobs", type=int, default=2, help="predictions run at once (default 2)")
    ap.add_argument("--no-mme", action="store_true", help="skip the MME-vs-cost-model table")
    args = ap.parse_args(argv)
    t0, cpu0 = time.perf_counter(), _children_cpu_s()
    rows: list[dict[str, object]] = []
    if args.from_json:
        rows = json.loads(args.from_json.read_text())
        for row in rows:
            _print_row(row)
    cases = [] if args.from_json else [c for c in CASES if c.id.startswith(args.only)]
    failed: list[str] = []
    with ThreadPoolExecutor(max(args.jobs, 1)) as pool:  # each case is its own processes
        for row in pool.map(_run_or_report, cases):
            if isinstance(row, str):  # (one failed case does not stop the others)
                failed.append(row)
                print(row, flush=True)
                continue
            rows.append(row)
            _print_row(row)
    if failed:
        print(f"\n{len(failed)} of {len(cases)} cases failed; no table is written", file=sys.stderr)
        return 1
    if not rows:
        print(f"no case id starts with {args.only!r}", file=sys.stderr)
        return 2
    print(f"\n{len(rows)} cases. {summary(rows)}")
    if cases:
        print(
            f"Ran in {time.perf_counter() - t0:.0f} s wall, {_children_cpu_s() - cpu0:.0f} s CPU "
            f"of the predictions, {args.jobs} at a time."
        )
    if not args.no_mme:
        from mme_table import render
        from mme_table import rows as mme_rows

        print("\nThe device model's MME time beside Intel's MME cost model (mme_oracle.py):\n")
        print(render(mme_rows()))
    if args.markdown:
        args.markdown.write_text(markdown(rows))
    if args.update_docs:
        if args.only or len(rows) != len(CASES):
            raise SystemExit("--update-docs needs every case (no --only)")
        update_docs(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
