"""Every report of the registry, in every format, on the sample traces and the shared real ones.

A before/after check for refactors that must not change what users read: run it on two commits
and compare the folders (`diff -r`). Each input gets `<name>/all.{txt,json,md,html}` (every
report the registry has, in one analysis) and `<name>/csv/` (one CSV per table); compare runs
as `compare/<a>__<b>.{txt,json}`. Text is rendered at a fixed width without colour.

    python tools/report_snapshot.py OUT_DIR [--only NAME_SUBSTRING]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "traces"


def inputs() -> dict[str, Path]:
    """name -> path for the samples (run dirs, loose traces) and every shared Kineto trace."""
    out: dict[str, Path] = {}
    samples = REPO / "sample_traces"
    for d in sorted(p for p in samples.iterdir() if p.is_dir()):
        if (d / "run.json").is_file():
            out[f"sample-{d.name}"] = d
        else:
            for f in sorted(d.glob("*.json")):
                out[f"sample-{d.name}-{f.stem}"] = f
    kineto = SHARED / "kineto"
    if kineto.is_dir():
        for f in sorted(kineto.rglob("*.json*")):
            rel = f.relative_to(kineto)
            if "execution_trace" in rel.parts and "_et" in f.name:
                continue  # not a Kineto trace
            out["kineto-" + "_".join(rel.parts[-3:]).replace(".json", "").replace(".gz", "")] = f
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)

    import hpuprof
    from hpuprof.analysis import analyze
    from hpuprof.analysis.registry import report_names
    from hpuprof.errors import HpuprofError
    from hpuprof.render import get_renderer

    names = [n for n in report_names() if n != "compare"]
    loaded = {}
    for name, path in inputs().items():
        if args.only and args.only not in name:
            continue
        t0 = time.perf_counter()
        dest = args.out / name
        dest.mkdir(parents=True, exist_ok=True)
        try:
            trace = hpuprof.load(path, cache=False)
            report = analyze(trace, reports=",".join(names))
        except HpuprofError as err:
            (dest / "error.txt").write_text(f"{type(err).__name__}: {err}\n")
            continue
        loaded[name] = trace
        for form, suffix in (("text", "txt"), ("json", "json"), ("md", "md"), ("html", "html")):
            kwargs = {"width": 120, "color": False} if form == "text" else {}
            data = get_renderer(form, **kwargs).render(report)
            (dest / f"all.{suffix}").write_bytes(data if isinstance(data, bytes) else data.encode())
        csv_dir = dest / "csv"
        csv_dir.mkdir(exist_ok=True)
        for table, text in get_renderer("csv").tables(report).items():
            (csv_dir / f"{table}.csv").write_text(text)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    from hpuprof.analysis import compare

    pairs = [
        ("sample-emulated_lazy", "sample-emulated_compile"),
        ("sample-emulated_lazy", "sample-emulated_bf16"),
        ("kineto-trace_compare_base_base", "kineto-trace_compare_test_test"),
        ("kineto-trace_diff_control_control", "kineto-trace_diff_test_test"),
    ]
    for a, b in pairs:
        if a in loaded and b in loaded:
            rep = compare(loaded[a], loaded[b])
            dest = args.out / "compare"
            dest.mkdir(parents=True, exist_ok=True)
            for form, suffix in (("text", "txt"), ("json", "json")):
                kwargs = {"width": 120, "color": False} if form == "text" else {}
                data = get_renderer(form, **kwargs).render(rep)
                (dest / f"{a}__{b}.{suffix}").write_bytes(
                    data if isinstance(data, bytes) else data.encode()
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
