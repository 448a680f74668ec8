"""Load mutants in forked children, each under a time and a memory limit, and classify them.

The parent imports hpuprof and its loaders once, then forks one child per mutant (a fork
costs milliseconds where a fresh interpreter costs a second). The child forks a grandchild
that writes the mutant (so building it leaves nothing in the child's heap), resets its peak
RSS (`/proc/self/clear_refs`), caps its address space (`RLIMIT_AS`: what it had plus the
memory limit) and loads the mutant with `hpuprof.load`: JSON mutants through the compiled
scanner and again through the pure-Python path (the two must agree), then, when it loaded,
`hpuprof analyze` (the CLI's `main`) on it. It reports each phase on a pipe; the parent kills
a phase that runs past the timeout in CPU seconds (on a busy machine the wall clock mostly
waits for a core), or past 4x the timeout in wall seconds.

Outcomes, per loader path:
- loaded: a Trace (and, when the mutant says so, the right one: see `mutate.Expect`);
- clean_error: one `TraceFormatError` naming the file and a position, in one line;
- vague_error: a `TraceFormatError` without a position or the file, or many lines long;
- crash: any other exception (signature: type and the innermost hpuprof frame), or a signal;
- hang: past the timeout; memory: `MemoryError`, or peak RSS past a small multiple of the input;
- wrong: loaded what it must refuse, or kept other than the complete events of a truncation;
- escape: a run directory's load opened or returned a file outside the run directory;
- divergent: the compiled and pure-Python paths gave different tables or errors.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import sys
import time
import traceback
import warnings
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import mutate
from tests.fuzz.mutate import Context, Expect, Seed

BAD_OUTCOMES = ("crash", "hang", "memory", "vague_error", "wrong", "escape", "divergent")
OUTCOMES = ("loaded", "clean_error", *BAD_OUTCOMES, "not_made")
PATHS = ("json-compiled", "json-pure", "gzip", "perfetto", "parquet", "rundir", "hwcsv", "hltv")
MEMORY_FLOOR = 256 << 20
MEMORY_FACTOR = 8
"""A load may grow the process by at most MEMORY_FLOOR + MEMORY_FACTOR x the input's bytes
(a gzip input: its decompressed bytes, counted up to 100x the compressed size)."""
_KEPT = re.compile(r"kept (\d+) complete events")


@dataclass
class Result:
    index: int
    seed: str
    path: str  # one of PATHS
    mutation: str
    outcome: str
    detail: str = ""
    seconds: float = 0.0
    peak_mb: float = 0.0
    analyze: str = ""  # ok / error / crash / hang ("" when not run)
    analyze_detail: str = ""
    analyze_seconds: float = 0.0
    file: str = ""
    expect_kept: bool = False  # a truncation inside the events array (complete events counted)


@dataclass
class Plan:
    """What one fuzz run does."""

    seeds: Sequence[Seed]
    scratch: Path
    count: int
    seed: int = 1
    jobs: int = 2
    timeout: float = 30.0
    memory_limit: int = 4 << 30
    analyze: bool = True
    analyze_every: int = 1  # hpuprof analyze on the loaded mutants whose index is a multiple
    long_name_max: int = 8 << 20
    keep_failures: Path | None = None
    outside: Path | None = None  # a valid trace outside every run directory (the bait)
    weights: dict[str, float] = field(default_factory=dict)
    deadline: float | None = None  # time.monotonic() after which no new mutant starts


# --- the child -------------------------------------------------------------------------------


def _status(key: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> int:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return _status("VmRSS")


def _signature(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/hpuprof/" in f.filename or "/hpudash/" in f.filename]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    place = f"{Path(where.filename).name}:{where.lineno} {where.name}" if where else "?"
    return f"{type(error).__name__} at {place}: {str(error)[:160]}"


def _classify_error(error: BaseException, path: Path, inside: Path | None) -> tuple[str, str]:
    from hpuprof.errors import TraceFormatError

    if isinstance(error, MemoryError):
        return "memory", _signature(error)
    if not isinstance(error, TraceFormatError):
        return "crash", _signature(error)
    text = str(error)
    named = error.path == str(path) or (
        inside is not None and Path(error.path).resolve().is_relative_to(inside.resolve())
    )
    if error.position is None or not named or "\n" in text or len(text) > 1000:
        return "vague_error", text[:300]
    return "clean_error", text[:300]


def _tables_equal(a: Any, b: Any) -> str:
    """ "" when the two traces hold the same tables, else what differs."""
    import pandas as pd

    for name in ("events", "counters", "flows", "processes", "threads"):
        try:
            pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
        except AssertionError as error:
            return f"{name}: {str(error).splitlines()[0][:160]}"
    if dict(a.metadata) != dict(b.metadata) or a.format != b.format:
        return "metadata or format"
    return ""


def _load_once(
    path: Path, *, pure: bool, cache: bool
) -> tuple[Any, list[str], BaseException | None]:
    import hpuprof
    from hpuprof.trace import fastscan

    os.environ["HPUPROF_PURE_PYTHON"] = "1" if pure else "0"
    fastscan._module.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            trace = hpuprof.load(path, cache=cache)
        except BaseException as error:
            return None, [str(w.message) for w in caught], error
    return trace, [str(w.message) for w in caught], None


def _check_loaded(
    trace: Any, notes: list[str], expect: Expect, inside: Path | None
) -> tuple[str, str]:
    if expect.error:
        return "wrong", f"loaded though it must be refused ({expect.why})"
    if expect.complete_events is not None:
        kept = [int(m.group(1)) for note in notes if (m := _KEPT.search(note))]
        if kept and kept[0] != expect.complete_events:
            return "wrong", f"kept {kept[0]} events, {expect.complete_events} are complete"
        if kept:
            return "loaded", f"kept the {kept[0]} complete events of the truncation"
    if inside is not None:
        root = inside.resolve()
        outside = [s for s in trace.sources if not Path(s).resolve().is_relative_to(root)]
        if outside:
            return "escape", f"loaded {outside[0]} from outside the run directory"
    events = trace.events
    if len(events) and (events["dur_ns"].min() < 0):
        return "wrong", "a negative duration"
    return "loaded", ""


def _analyze(path: Path) -> tuple[str, str]:
    from hpuprof.cli.main import INTERNAL_ERROR_EXIT, main

    out = Path(os.environ["HPUPROF_CACHE_DIR"]) / "report.json"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["analyze", str(path), "--format", "json", "-o", str(out)])
    except BaseException as error:
        return "crash", _signature(error)
    said = [line for line in err.getvalue().splitlines() if line.startswith("hpuprof:")]
    message = (said[-1] if said else err.getvalue().strip())[:300]
    if code == INTERNAL_ERROR_EXIT:
        return "crash", message
    if code != 0:
        return "error", message
    return "ok", ""


def _child(plan: Plan, seed: Seed, index: int, workdir: Path, report: Any) -> None:
    def say(**item: Any) -> None:
        report.write(json.dumps(item) + "\n")
        report.flush()

    made = _make_in_grandchild(plan, seed, index, workdir)
    if made is None:
        say(event="generated", failed=True)
        return
    say(event="generated", **made)
    path = Path(made["path"])
    expect = Expect(**made["expect"])
    inside = path if seed.kind == "rundir" else None
    bait = _bait(plan)
    if inside is not None:
        sys.addaudithook(_audit_opens(bait))
    os.environ["HPUPROF_CACHE_DIR"] = str(workdir / "cache")
    limit = _status("VmSize") + plan.memory_limit
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    first = "json-compiled" if seed.kind == "json" else seed.kind
    rss0 = _reset_peak()
    results: dict[str, Any] = {}
    for name, pure in ((first, False), ("json-pure", True)):
        if name == "json-pure" and seed.kind != "json":
            continue
        say(event="phase", name=name)
        start = time.perf_counter()
        trace, notes, error = _load_once(path, pure=pure, cache=not pure)
        seconds = time.perf_counter() - start
        peak = max(_status("VmHWM") - rss0, 0)
        if error is not None:
            outcome, detail = _classify_error(error, path, inside)
        else:
            outcome, detail = _check_loaded(trace, notes, expect, inside)
        if _OPENED:
            outcome, detail = "escape", f"opened {_OPENED[0]}"
        if outcome in ("loaded", "clean_error") and peak > made["memory_bound"]:
            outcome, detail = "memory", f"peak RSS grew {peak >> 20} MB"
        results[name] = (trace, error)
        say(event="result", name=name, outcome=outcome, detail=detail, seconds=seconds,
            peak_mb=peak / 2**20)  # fmt: skip
        del trace, error
    if seed.kind == "json":
        say(event="compare", detail=_compare(results["json-compiled"], results["json-pure"]))
    loaded = [name for name, (trace, _) in results.items() if trace is not None]
    if plan.analyze and loaded and index % plan.analyze_every == 0:
        say(event="phase", name="analyze")
        os.environ["HPUPROF_PURE_PYTHON"] = "0"
        outcome, detail = _analyze(path)
        say(event="analyze", outcome=outcome, detail=detail)


def _compare(compiled: tuple[Any, Any], pure: tuple[Any, Any]) -> str:
    (a, a_error), (b, b_error) = compiled, pure
    if (a is None) != (b is None):
        return f"compiled {'loaded' if a is not None else a_error}; pure {'loaded' if b is not None else b_error}"
    if a is None:
        if type(a_error) is not type(b_error) or str(a_error) != str(b_error):
            return f"errors differ: {str(a_error)[:120]} | {str(b_error)[:120]}"
        return ""
    return _tables_equal(a, b)


_OPENED: list[str] = []


def _bait(plan: Plan) -> set[str]:
    names = {"/etc/passwd", "/proc/self/environ"}
    if plan.outside is not None:
        names.add(str(plan.outside.resolve()))
    return names


def _audit_opens(bait: set[str]) -> Any:
    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            name = os.fsdecode(args[0])
            with contextlib.suppress(OSError, ValueError):
                if name in bait or os.path.realpath(name) in bait:
                    _OPENED.append(name)

    return hook


def _make_in_grandchild(plan: Plan, seed: Seed, index: int, workdir: Path) -> dict[str, Any] | None:
    meta_file = workdir / "described.meta"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            meta_file.write_text(json.dumps(make_mutant(plan, seed, index, workdir)))
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not meta_file.is_file():
        return None
    made: dict[str, Any] = json.loads(meta_file.read_text())
    return made


def make_mutant(plan: Plan, seed: Seed, index: int, workdir: Path) -> dict[str, Any]:
    """Write mutant `index` of `seed` under `workdir`; its description (JSON-able)."""
    rng = random.Random(f"{plan.seed}:{index}")
    ctx = Context(long_name_max=plan.long_name_max, check_truncation=len(seed.data) < (8 << 20))
    expect = mutate.NONE
    if seed.kind == "rundir":
        target = workdir / seed.path.name
        assert plan.outside is not None
        mutation, expect = mutate.rundir_mutation(seed.path, target, rng, plan.outside)
        size = sum(
            f.stat().st_size for f in target.rglob("*") if f.is_file() and not f.is_symlink()
        )
        return _described(seed, mutation, target, expect, size, size)
    suffix = "".join(seed.path.suffixes[-2:]) if seed.kind == "gzip" else seed.path.suffix
    if seed.kind == "json":
        mutation = rng.choice(mutate.mutations_for(seed.data))
        data, expect = mutate.JSON_MUTATIONS[mutation](seed.data, rng, ctx)
        if rng.random() < 0.1:
            suffix = rng.choice(("", ".trace", ".gz", ".pftrace"))  # found by content, or not
            if suffix == ".pftrace":  # read as Perfetto (refused): no JSON expectation holds
                expect = mutate.NONE
    elif seed.kind == "gzip":
        mutation, data, expect = mutate.gzip_mutation(seed.data, rng, ctx)
    elif seed.kind == "perfetto":
        mutation, data, expect = mutate.perfetto_mutation(seed.data, rng, ctx)
    elif seed.kind == "hwcsv":
        mutation, data, expect = mutate.hw_csv_mutation(seed.data, rng, ctx)
    elif seed.kind == "hltv":
        mutation, data, expect = mutate.hltv_mutation(seed.data, rng, ctx)
    else:
        mutation, data = mutate.parquet_mutation(seed.path, rng)
    target = workdir / f"mutant{suffix}"
    target.write_bytes(data)
    content = _content_size(data) if seed.kind == "gzip" else len(data)
    return _described(seed, mutation, target, expect, len(data), content)


def _described(
    seed: Seed, mutation: str, path: Path, expect: Expect, size: int, content: int
) -> dict[str, Any]:
    return {
        "mutation": mutation,
        "path": str(path),
        "expect": asdict(expect),
        "size": size,
        "memory_bound": MEMORY_FLOOR + MEMORY_FACTOR * content,
    }


def _content_size(data: bytes) -> int:
    """Decompressed bytes of a gzip body (every member), counted up to 100x its size."""
    limit = 100 * len(data)
    total = 0
    inflater = zlib.decompressobj(wbits=47)
    while data and total < limit:
        try:
            out = inflater.decompress(data, 1 << 22)
        except zlib.error:
            break
        total += len(out)
        if inflater.eof:
            data = inflater.unused_data
            inflater = zlib.decompressobj(wbits=47)
        elif not out and inflater.unconsumed_tail == data:
            break  # no progress: a truncated stream
        else:
            data = inflater.unconsumed_tail
    return max(min(total, limit), 1)


# --- the parent ------------------------------------------------------------------------------


@dataclass
class _Running:
    pid: int
    fd: int
    index: int
    seed: Seed
    workdir: Path
    buffer: bytes = b""
    made: dict[str, Any] = field(default_factory=dict)
    phase: str = ""
    phase_start: float = 0.0
    results: list[Result] = field(default_factory=list)
    killed: bool = False
    kill_reason: str = ""
    phase_cpu: float = 0.0  # the child's CPU seconds when its phase began


def choose_seed(plan: Plan, index: int) -> Seed:
    rng = random.Random(f"{plan.seed}:seed:{index}")
    kinds = sorted({s.kind for s in plan.seeds})
    weights = [plan.weights.get(kind, 1.0) for kind in kinds]
    kind = rng.choices(kinds, weights)[0]
    return rng.choice([s for s in plan.seeds if s.kind == kind])


def run(plan: Plan, progress: Any = None) -> list[Result]:
    """Fuzz `plan.count` mutants, `plan.jobs` at a time; every result."""
    _preload()
    plan.scratch.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    running: dict[int, _Running] = {}
    upcoming = iter(range(plan.count))
    exhausted = False
    while running or not exhausted:
        while not exhausted and len(running) < plan.jobs:
            late = plan.deadline is not None and time.monotonic() > plan.deadline
            index = None if late else next(upcoming, None)
            if index is None:
                exhausted = True
                break
            job = _start(plan, index)
            running[job.fd] = job
        if not running:
            break
        ready, _, _ = select.select(list(running), [], [], 0.5)
        for fd in ready:
            job = running[fd]
            chunk = os.read(fd, 1 << 16)
            if chunk:
                job.buffer += chunk
                _consume(job, plan)
            else:
                del running[fd]
                done = _finish(job, plan)
                results.extend(done)
                if progress is not None:
                    progress(len(results), done)
        now = time.monotonic()
        for job in list(running.values()):
            if not job.phase or job.killed:
                continue
            # past the timeout in CPU seconds (a busy machine makes the wall clock wait for a
            # core), or past 4x in wall seconds
            cpu = _cpu_seconds(job.pid) - job.phase_cpu
            wall = now - job.phase_start
            if job.phase == "generate":
                cpu, wall = 0.0, wall / 4
            if cpu > plan.timeout or wall > 4 * plan.timeout:
                job.killed = True
                job.kill_reason = (
                    f"past {plan.timeout:.0f} CPU-s"
                    if cpu > plan.timeout
                    else (f"past {4 * plan.timeout:.0f} s")
                )
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job.pid, signal.SIGKILL)
    return results


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` (all its threads); 0 when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _preload() -> None:
    """Import what every child needs once, in the parent (nothing is run: no threads yet)."""
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2  # noqa: F401

    import hpuprof.analysis
    import hpuprof.cli.main
    import hpuprof.trace.cache
    import hpuprof.trace.kineto_json
    import hpuprof.trace.load
    import hpuprof.trace.normalize
    import hpuprof.trace.parquet
    import hpuprof.trace.perfetto_read

    hpuprof.cli.main.build_app()


def _start(plan: Plan, index: int) -> _Running:
    seed = choose_seed(plan, index)
    workdir = plan.scratch / f"m{index:06d}"
    workdir.mkdir(parents=True, exist_ok=True)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.setpgid(0, 0)
        os.close(read_fd)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        code = 0
        try:
            with os.fdopen(write_fd, "w") as report:
                _child(plan, seed, index, workdir, report)
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write_fd)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    return _Running(
        pid, read_fd, index, seed, workdir, phase="generate", phase_start=time.monotonic()
    )


def _consume(job: _Running, plan: Plan) -> None:
    *lines, job.buffer = job.buffer.split(b"\n")
    for line in lines:
        item = json.loads(line)
        event = item.pop("event")
        if event == "generated":
            job.made = item
            job.phase = ""
        elif event == "phase":
            job.phase, job.phase_start = item["name"], time.monotonic()
            job.phase_cpu = _cpu_seconds(job.pid)
        elif event == "result":
            job.results.append(
                Result(
                    job.index,
                    job.seed.name,
                    item["name"],
                    job.made["mutation"],
                    item["outcome"],
                    item["detail"],
                    item["seconds"],
                    item["peak_mb"],
                    expect_kept=job.made["expect"]["complete_events"] is not None,
                )
            )
            job.phase = ""
        elif event == "compare" and item["detail"]:
            for result in job.results:
                if result.outcome in ("loaded", "clean_error"):
                    result.outcome, result.detail = "divergent", item["detail"]
        elif event == "analyze":
            for result in job.results:
                result.analyze, result.analyze_detail = item["outcome"], item["detail"]
                result.analyze_seconds = time.monotonic() - job.phase_start
            job.phase = ""


def _finish(job: _Running, plan: Plan) -> list[Result]:
    os.close(job.fd)
    _, status = os.waitpid(job.pid, 0)
    made = job.made
    if job.phase and job.phase != "analyze":  # killed or died inside a load
        name = job.phase if job.phase != "generate" else "generate"
        outcome = "hang" if job.killed else "crash"
        detail = job.kill_reason if job.killed else _death(status)
        job.results.append(
            Result(
                job.index,
                job.seed.name,
                name,
                made.get("mutation", "?"),
                outcome,
                detail,
                plan.timeout if job.killed else 0.0,
            )
        )
    elif job.phase == "analyze":
        for result in job.results:
            result.analyze = "hang" if job.killed else "crash"
            result.analyze_detail = job.kill_reason if job.killed else _death(status)
    if not job.results:  # the mutator failed (a bug of the fuzzer, not of a loader)
        job.results.append(
            Result(job.index, job.seed.name, job.seed.kind, "?", "not_made", "mutant not made")
        )
    failed = any(r.outcome in BAD_OUTCOMES or r.analyze in ("crash", "hang") for r in job.results)
    for result in job.results:
        result.file = made.get("path", "")
    if failed and plan.keep_failures is not None and made.get("path"):
        keep = plan.keep_failures / f"{job.index:06d}-{made.get('mutation', '?').replace(':', '_')}"
        with contextlib.suppress(OSError):
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(
                job.workdir, keep, symlinks=True, ignore=shutil.ignore_patterns("cache")
            )
            for result in job.results:
                result.file = str(keep / Path(made["path"]).name)
    shutil.rmtree(job.workdir, ignore_errors=True)
    return job.results


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited {os.WEXITSTATUS(status)} without a result"


# --- figures ---------------------------------------------------------------------------------


def summary(results: Sequence[Result]) -> str:
    """The figures of a run: outcomes by loader path, `hpuprof analyze` outcomes, signatures."""
    lines = []
    header = f"{'loader path':<14}{'mutants':>8}" + "".join(f"{o:>12}" for o in OUTCOMES)
    lines.append(header)
    paths = [p for p in PATHS if any(r.path == p for r in results)]
    for path in [*paths, "all"]:
        rows = [r for r in results if path in ("all", r.path)]
        counts = Counter(r.outcome for r in rows)
        lines.append(
            f"{path:<14}{len(rows):>8}" + "".join(f"{counts.get(o, 0):>12}" for o in OUTCOMES)
        )
    per_mutant = Counter(mutant_outcome(rows) for rows in by_mutant(results).values())
    lines.append(
        f"per mutant (its worst path), {sum(per_mutant.values())} mutants: "
        + ", ".join(f"{o} {per_mutant[o]}" for o in OUTCOMES if per_mutant[o] or o == "crash")
    )
    mutants = {r.index: r for r in results}
    analysed = Counter(r.analyze for r in mutants.values() if r.analyze)
    lines.append(
        "hpuprof analyze on loaded mutants: "
        + ", ".join(f"{k} {analysed.get(k, 0)}" for k in ("ok", "error", "crash", "hang"))
    )
    cuts = [r for r in results if r.mutation.endswith("truncate") and r.expect_kept]
    held = [r for r in cuts if r.detail.startswith("kept the")]
    lines.append(
        f"truncations inside the events array: {len(held)} of {len(cuts)} loads kept exactly "
        "the complete events before the cut"
    )
    slowest = max(results, key=lambda r: r.seconds, default=None)
    largest = max(results, key=lambda r: r.peak_mb, default=None)
    if slowest is not None and largest is not None:
        lines.append(
            f"slowest load {slowest.seconds:.2f} s (#{slowest.index} {slowest.path}, "
            f"{slowest.mutation}); largest peak RSS growth {largest.peak_mb:.0f} MB "
            f"(#{largest.index} {largest.path}, {largest.mutation})"
        )
    bad = [r for r in results if r.outcome in BAD_OUTCOMES or r.analyze in ("crash", "hang")]
    signatures = Counter(_short(r) for r in bad)
    for text, count in signatures.most_common(40):
        lines.append(f"  {count:5d} x {text}")
    return "\n".join(lines)


_WORST_FIRST = ("hang", "memory", "crash", "escape", "wrong", "divergent", "vague_error")


def by_mutant(results: Sequence[Result]) -> dict[int, list[Result]]:
    """The results of each mutant (one per loader path it went through), by mutant index."""
    grouped: dict[int, list[Result]] = {}
    for result in results:
        grouped.setdefault(result.index, []).append(result)
    return grouped


def mutant_outcome(rows: Sequence[Result]) -> str:
    """One mutant's outcome as the issue counts it: its worst path's (a bad outcome on any
    path, else not_made, else clean_error when any path refused it, else loaded)."""
    seen = {r.outcome for r in rows}
    for outcome in (*_WORST_FIRST, "not_made", "clean_error"):
        if outcome in seen:
            return outcome
    return "loaded"


def _short(result: Result) -> str:
    if result.outcome in BAD_OUTCOMES:
        return f"{result.outcome} [{result.path}/{result.mutation}] {result.detail[:200]}"
    return (
        f"analyze {result.analyze} [{result.path}/{result.mutation}] {result.analyze_detail[:200]}"
    )


def failures(results: Sequence[Result]) -> Iterator[Result]:
    for result in results:
        if result.outcome in BAD_OUTCOMES or result.analyze in ("crash", "hang"):
            yield result
