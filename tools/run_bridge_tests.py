"""Run the Gaudi PyTorch bridge's own python tests under the hpusim emulator; print the counts.

    python tools/run_bridge_tests.py --bridge PATH [--mode lazy] [--dirs lazy,any_mode]
        [--sample 10] [--workers 2] [--timeout 120] [--junit out.xml] [-k EXPR]
        [--memory-fraction 0.5]

PATH is a checkout of HabanaAI/gaudi-pytorch-bridge (a work tree, or a bare git directory whose
HEAD is exported with `git archive`). Nothing of the bridge is copied into this repository: its
`tests/pytest_working` is extracted into a temporary folder and run there with the bridge's own
conftest (`--mode lazy` sets `PT_HPU_LAZY_MODE=1`, `PT_HPU_PLACE_ON_CPU=none`), with
`runtime/shim` on `PYTHONPATH` so `import habana_frameworks.torch` is the emulator.

Counted apart ("device-only") are the tests the emulator declines with a NotImplementedError
naming itself (`... is not available under the hpusim emulator`: fp8 kernels, the media pipe,
pyhlml, fbgemm TPC kernels) and the tests whose failure is CPU torch having no kernel for an fp8
dtype (`Float8_e4m3fn` / `Float8_e5m2` in the message): both need the device's fp8 hardware.
The pass rate is passed / (passed + failed + errors), device-only ones not counted; the raw
rate (device-only counted as failures) is printed beside it.
`--sample K` runs every K-th collected test (deterministic) for a quick estimate.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIM = REPO / "runtime" / "shim"
DEVICE_ONLY = "not available under the hpusim emulator"
FP8_DTYPE = re.compile(r"Float8_e[45]m[23]")
SUITE = "tests/pytest_working"


@dataclass
class Tally:
    """Outcomes of one run, by test id."""

    outcomes: dict[str, str] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)


def extract_suite(repo: Path, into: Path, subdir: str = SUITE, ref: str = "HEAD") -> Path:
    """`subdir` of a checkout (its work tree, or `ref` of its git dir), copied into `into`."""
    work_tree = repo / subdir
    if work_tree.is_dir() and ref == "HEAD":
        shutil.copytree(work_tree, into / subdir)
        return into / subdir
    # a bare git dir, or a checkout: its `.git` is a folder, or a file in a linked worktree
    bare = (repo / "HEAD").is_file()
    if not bare and not (repo / ".git").exists():
        raise SystemExit(f"{repo}: not a checkout holding {subdir} (no such folder, no git dir)")
    git = ["git", f"--git-dir={repo}"] if bare else ["git", "-C", str(repo)]
    archive = subprocess.run(
        [*git, "archive", ref, subdir],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(f"{repo}: git archive {ref} failed: {archive.stderr.decode()[-400:]}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / subdir


def emulator_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment with the shim first on PYTHONPATH, this interpreter's bin first
    on PATH (tests that spawn `python` get the one with torch and the clients) and no stray
    bridge variables."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(SHIM), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["HABANA_LOGS"] = str(tmp_path / "habana_logs")
    for var in ("PT_HPU_LAZY_MODE", "RANK", "WORLD_SIZE"):
        env.pop(var, None)
    return env


def with_emulator_of(root: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with the hpusim and shim of `root/runtime` (another commit's, extracted) first on
    PYTHONPATH, in place of this checkout's shim."""
    runtime = root / "runtime"
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and "runtime/shim" not in p]
    return {**env, "PYTHONPATH": os.pathsep.join([str(runtime / "shim"), str(runtime), *rest])}


def collect(
    suite: Path, dirs: list[str], mode: str, env: dict[str, str], keyword: str
) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "--mode", mode, *dirs, "--collect-only", "-q"]
    cmd += ["-p", "no:cacheprovider", "--continue-on-collection-errors"]
    if keyword:
        cmd += ["-k", keyword]
    out = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, check=False)
    return collected_ids(out.stdout)


def collected_ids(stdout: str) -> list[str]:
    """The test ids of `pytest -q --collect-only`'s output: its first block. The ERRORS section
    after the blank line holds "::" too (`test_x.py::test_y: in "parametrize" ...`), and taken
    for an id it made the run end at collection."""
    ids = stdout.split("\n\n", 1)[0].splitlines()
    return [line for line in ids if "::" in line and not line.startswith(" ")]


def address_space_cap(fraction: float) -> Callable[[], None]:
    """A `preexec_fn` capping the test process's address space at `fraction` of the host's RAM:
    a test that allocates past it (any_mode/test_huge_tensor.py: three 8 GiB tensors, skipped
    only on Habana's simulator) fails with torch's "can't allocate memory" instead of the kernel
    killing the whole run (and, on a shared machine, maybe someone else's process)."""
    limit = int(fraction * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


def node_id(case: ET.Element) -> str:
    """The pytest node id of a junit (xunit1) testcase, that pytest takes back to run it alone:
    `file::Class::name` (the classname is the module's dotted path, then the class if any)."""
    classname, name = case.get("classname", ""), case.get("name", "")
    file = case.get("file") or classname.replace(".", "/") + ".py"
    module = file.removesuffix(".py").replace("/", ".")
    cls = classname.removeprefix(module).lstrip(".") if classname.startswith(module) else ""
    return "::".join(part for part in (file, cls, name) if part)


def parse_junit(path: Path) -> Tally:
    tally = Tally()
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = node_id(case)
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                message = (child.get("message") or child.text or "").strip()
                device_only = DEVICE_ONLY in message or FP8_DTYPE.search(message) is not None
                outcome = "device_only" if device_only else child.tag
                first = message.splitlines()[0] if message else child.tag
                tally.reasons[re.sub(r"0x[0-9a-f]+|\d+", "N", first)[:160]] += 1
            elif child.tag == "skipped":
                outcome = "skipped"
        tally.outcomes[test_id] = outcome
    return tally


def run(args: argparse.Namespace) -> int:
    bridge = Path(args.bridge).expanduser()
    dirs = [d for d in args.dirs.split(",") if d]
    with tempfile.TemporaryDirectory(prefix="bridge-tests-") as tmp:
        tmp_path = Path(tmp)
        suite = extract_suite(bridge, tmp_path)
        env = emulator_env(tmp_path)
        ids = collect(suite, dirs, args.mode, env, args.k)
        selected = ids[:: args.sample] if args.sample > 1 else ids
        listing = tmp_path / "selected.txt"
        listing.write_text("\n".join(selected) + "\n")
        junit = Path(args.junit) if args.junit else tmp_path / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "--mode", args.mode, "-q", "-p", "no:cacheprovider"]
        cmd += [
            "--junitxml",
            str(junit),
            "--timeout",
            str(args.timeout),
            "-o",
            "junit_family=xunit1",
        ]
        if args.workers > 1:
            cmd += ["-n", str(args.workers)]
        cmd += [f"@{listing}"]
        started = time.monotonic()
        done = subprocess.run(
            cmd,
            cwd=suite,
            env=env,
            check=False,
            stdout=subprocess.DEVNULL,
            preexec_fn=address_space_cap(args.memory_fraction),
        )
        elapsed = time.monotonic() - started
        if done.returncode < 0 or done.returncode > 5:
            print(f"pytest ended with {done.returncode}: killed? (no junit if it was)")
        tally = parse_junit(junit) if junit.is_file() else Tally()
    return report(tally, len(ids), len(selected), elapsed, dirs, args)


def report(
    tally: Tally,
    collected: int,
    selected: int,
    elapsed: float,
    dirs: list[str],
    args: argparse.Namespace,
) -> int:
    passed, failed = tally.count("passed"), tally.count("failure")
    errors, skipped = tally.count("error"), tally.count("skipped")
    device_only = tally.count("device_only")
    judged = passed + failed + errors
    print(f"bridge python tests under hpusim ({', '.join(dirs)}; --mode {args.mode})")
    print(f"  collected {collected}, ran {selected} (every {args.sample}), {elapsed:.0f} s")
    print(
        f"  {passed} passed, {failed} failed, {errors} errors, {skipped} skipped, "
        f"{device_only} device-only (declined by the emulator)"
    )
    rate = 100.0 * passed / judged if judged else 0.0
    raw = 100.0 * passed / (judged + device_only) if judged + device_only else 0.0
    print(f"  pass rate (device-only excluded): {rate:.1f}% ({passed}/{judged})")
    print(f"  raw pass rate (device-only counted as failures): {raw:.1f}%")
    by_dir: dict[str, Counter[str]] = {}
    for test_id, outcome in tally.outcomes.items():
        by_dir.setdefault(test_id.split("::", 1)[0].split("/", 1)[0], Counter())[outcome] += 1
    for name, counts in sorted(by_dir.items()):
        print(f"  {name}: " + ", ".join(f"{v} {k}" for k, v in counts.most_common()))
    if tally.reasons:
        print("  most common failure reasons:")
        for reason, n in tally.reasons.most_common(args.reasons):
            print(f"    {n:5d}  {reason}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bridge", required=True, help="gaudi-pytorch-bridge checkout or git dir")
    p.add_argument("--mode", default="lazy", choices=("lazy", "eager"))
    p.add_argument("--dirs", default="lazy,any_mode")
    p.add_argument("--sample", type=int, default=1, help="run every K-th test")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=int, default=120, help="seconds per test")
    p.add_argument("--junit", default="", help="keep the junit XML here")
    p.add_argument(
        "--memory-fraction",
        type=float,
        default=0.5,
        help="cap each test process's address space at this part of the host's RAM",
    )
    p.add_argument("--reasons", type=int, default=15, help="failure reasons to list")
    p.add_argument("-k", default="", help="pytest -k expression")
    return run(p.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
