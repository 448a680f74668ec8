"""Run lightning-habana's own test suite under the hpusim emulator; print pass/fail counts.

    python tools/run_lightning_habana_tests.py --repo PATH [--ref 1.6.0]
        [--files tests/test_pytorch/test_accelerator.py,...] [--before REF] [--timeout 300]

PATH is a checkout (or bare git directory) of Lightning-AI/lightning-Habana; `--ref` picks the
release whose `tests/` match the installed lightning-habana (1.6.0, pinned in pyproject's
`[clients]` extra). Nothing of lightning-habana is copied into this repository: its `tests/` is
extracted into a temporary folder and run there with `runtime/shim` first on `PYTHONPATH`, so
`import habana_frameworks.torch` (and `lightning_habana`'s own imports) reach the emulator.

`--before REF` runs the same tests a second time with the shim and emulator of this repository's
commit REF (extracted with `git archive`, placed before the installed hpusim on `PYTHONPATH`), and
prints both tallies: the baseline measured in the same run.

`--pypi-deepspeed` waives lightning-habana's pin on Habana's DeepSpeed fork for the run
(`tools/lightning_habana_pypi_deepspeed.py`, a pytest plugin calling
`hpuprof.integrations.deepspeed.accept_pypi_deepspeed`), so `tests/test_pytorch/test_deepspeed.py`
runs on PyPI's DeepSpeed (the `[deepspeed]` extra) instead of stopping at the pin.

lightning's demo `MNISTDataModule` (`test_hpu_graphs.py`) finds MNIST's files in `./data` as
torchvision would download them: random stand-ins at MNIST's sizes (`run_public_scripts`).

`--cards N` emulates a server of N cards: the emulator counts N devices (`LOCAL_WORLD_SIZE`, as
`hpuprof record --emulate --cards N` sets it), so the tests marked "requires multiple HPU devices"
run instead of skipping. `--hpus N` is the suite's own option (how many of them a test's Trainer
uses). lightning-habana's CI runs `test_deepspeed.py` on an 8-card server with `--hpus 1`
(`.azure/hpu-tests.yml`): `--cards 8 --hpus 1` is that run. A Trainer with more than one device
starts one process per card with Lightning's own launcher (it runs the same pytest command again
with `LOCAL_RANK` set) and the cards' collectives go through the emulator's HCCL.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from run_bridge_tests import (
    REPO,
    Tally,
    emulator_env,
    extract_suite,
    parse_junit,
    with_emulator_of,
)
from run_public_scripts import torchvision_mnist_files

DEFAULT_FILES = (
    "tests/test_pytorch/test_accelerator.py",
    "tests/test_pytorch/test_profiler.py",
    "tests/test_pytorch/test_hpu_graphs.py",
)


TOOLS = Path(__file__).resolve().parent
PYPI_DEEPSPEED_PLUGIN = "lightning_habana_pypi_deepspeed"
"""The pytest plugin (a module beside this tool) that `--pypi-deepspeed` loads."""


def with_pypi_deepspeed(env: dict[str, str]) -> dict[str, str]:
    """`env` with this tool's folder on PYTHONPATH, where the suite's pytest finds the plugin."""
    rest = env.get("PYTHONPATH", "")
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in (rest, str(TOOLS)) if p)}


def on_cards(env: dict[str, str], cards: int) -> dict[str, str]:
    """`env` in which the emulator counts `cards` devices (its `device_count`)."""
    return {**env, "LOCAL_WORLD_SIZE": str(cards)} if cards > 1 else env


def run_suite(
    suite_root: Path,
    files: list[str],
    env: dict[str, str],
    timeout: int,
    plugins: list[str],
    hpus: int = 1,
) -> Tally:
    junit = suite_root / f"junit-{time.monotonic_ns()}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    for plugin in plugins:
        cmd += ["-p", plugin]
    cmd += ["--junitxml", str(junit), "-o", "junit_family=xunit1", "--timeout", str(timeout)]
    cmd += ["--hpus", str(hpus), *files]
    subprocess.run(cmd, cwd=suite_root, env=env, check=False, stdout=subprocess.DEVNULL)
    return parse_junit(junit) if junit.is_file() else Tally()


def before_env(ref: str, tmp: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with the shim and hpusim of this repository's commit `ref` in front."""
    extract_suite(REPO, tmp, "runtime", ref)
    return with_emulator_of(tmp, env)


def describe(label: str, tally: Tally) -> None:
    counts = Counter(tally.outcomes.values())
    print(
        f"  {label}: {counts['passed']} passed, {counts['failure']} failed, "
        f"{counts['error']} errors, {counts['skipped']} skipped"
    )
    by_file: dict[str, Counter[str]] = {}
    for test_id, outcome in tally.outcomes.items():
        by_file.setdefault(test_id.split("::", 1)[0], Counter())[outcome] += 1
    for name, per in sorted(by_file.items()):
        print(f"    {name}: " + ", ".join(f"{v} {k}" for k, v in per.most_common()))
    for reason, n in tally.reasons.most_common(8):
        print(f"    {n:4d}  {reason}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", required=True, help="lightning-Habana checkout or git dir")
    p.add_argument("--ref", default="1.6.0", help="release tag whose tests/ to run")
    p.add_argument("--files", default=",".join(DEFAULT_FILES), help="test files, comma-separated")
    p.add_argument("--before", default="", help="also run with this repository's commit REF")
    p.add_argument("--timeout", type=int, default=300, help="seconds per test")
    p.add_argument(
        "--pypi-deepspeed",
        action="store_true",
        help="waive lightning-habana's pin on Habana's DeepSpeed fork (PyPI's runs instead)",
    )
    p.add_argument("--cards", type=int, default=1, help="the emulated server's cards (1-8)")
    p.add_argument("--hpus", type=int, default=1, help="the suite's --hpus: cards a test uses")
    args = p.parse_args()
    if not 1 <= args.cards <= 8:
        p.error(f"--cards {args.cards}: a Gaudi server has 1 to 8 cards")
    if not 1 <= args.hpus <= args.cards:
        p.error(f"--hpus {args.hpus}: a test can use 1 to --cards ({args.cards}) cards")
    files = [f for f in args.files.split(",") if f]
    plugins = [PYPI_DEEPSPEED_PLUGIN] if args.pypi_deepspeed else []
    with tempfile.TemporaryDirectory(prefix="lightning-habana-tests-") as tmp:
        tmp_path = Path(tmp)
        extract_suite(Path(args.repo).expanduser(), tmp_path, "tests", args.ref)
        # what lightning's demo MNISTDataModule downloads with torchvision into ./data (the
        # suite's cwd), at MNIST's sizes: it holds 5,000 training images out for validation
        torchvision_mnist_files(tmp_path / "data", train=60_000, test=10_000)
        env = on_cards(emulator_env(tmp_path), args.cards)
        if args.pypi_deepspeed:
            env = with_pypi_deepspeed(env)
        print(
            f"lightning-habana {args.ref} tests under hpusim ({len(files)} files, "
            f"{args.cards} cards, --hpus {args.hpus})"
        )
        started = time.monotonic()
        now = run_suite(tmp_path, files, env, args.timeout, plugins, args.hpus)
        print(f"  ran in {time.monotonic() - started:.0f} s")
        describe("now", now)
        if args.before:
            old_root = tmp_path / "before"
            old_root.mkdir()
            old_env = before_env(args.before, old_root, env)
            old = run_suite(tmp_path, files, old_env, args.timeout, plugins, args.hpus)
            describe(f"before ({args.before})", old)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
