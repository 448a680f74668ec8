"""`habana_frameworks.torch.utils.experimental` (emulated): the dynamic-shape tools of gaudi.md
2.1-2.3: `data_dynamicity`, `detect_recompilation_auto_model`, `const_shape_dataloader`.

Output follows the 1.19 bridge's `utils/experimental/detect_recompilation.py`: the log lines,
the table layout (`Table`), the CSV rows (class as `module.Class`, location as the file) and
the "dynamic child" comment from the module tree (`_parse`, `_process_tree`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

import hpusim.state as state
from hpusim.hpu_graphs import input_hash
from hpusim.lazy import mark_step
from hpusim.metrics import metric_localcontext

BORDER: Final = "\033[96m"
HEADER: Final = "\033[91m"
RESET: Final = "\033[0m"
BOLD: Final = "\033[1m"
WIDTH: Final = 120

COMMENT_NEW_INPUT: Final = "Recompiled due to new input shape"
COMMENT_DYN_OPS: Final = "Already processed input shape still recompiled. Maybe dyn ops"
COMMENT_DYN_OPS_OUT: Final = (
    "Already processed input shape still recompiled and has new output shape. Maybe dyn ops"
)
DYNAMIC_CHILD: Final = ". Could be due to dynamic child"
TAG: Final = "[DETECT_RECOMPILE_AUTO]"


def get_shape(item: Any) -> Any:
    """The shape key of a batch: tensors by shape, containers recursively, else a hash."""
    import torch

    if isinstance(item, torch.Tensor):
        return tuple(item.shape)
    if isinstance(item, (list, tuple)):
        return tuple(get_shape(x) for x in item)
    if isinstance(item, dict):
        return tuple((get_shape(k), get_shape(v)) for k, v in item.items())
    print(f"Found type{type(item)}, not of types list, tuple, dict or tensor so using hash")
    return hash(item)


def verdict(n: int) -> str:
    """The bridge's one-line verdict for `n` unique shapes."""
    if n == 0:
        return "Dataset looks empty"
    if n == 1:
        return "There is no dynamicity in input data shapes"
    if n <= 5:
        return "There is a little dynamicity in input data shapes"
    if n <= 20:
        return "There is some dynamicity in input data shapes"
    return "There is a lot of dynamicity in input data shapes"


def table(headers: list[str], rows: list[list[Any]], width: int = WIDTH) -> str:
    """The bridge's `Table` (detect_recompilation.py): each column's width is its share of the
    widest cells (header included) times `width`, plus 1; a cell longer than its column wraps
    onto more lines; `=` rules around the header (red, then bold), `-` under each row."""
    cells = [[str(c) for c in r] for r in [headers, *rows]]
    widest = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    total = sum(widest) or 1
    budget = [int(w / total * width) + 1 for w in widest]
    bar = f"{BORDER}|{RESET}"

    def rule(ch: str) -> str:
        return f"{BORDER}{ch * (sum(budget) + len(budget) + 1)}{RESET}\n"

    out = ""
    for index, row in enumerate(cells):
        if index == 0:
            out += rule("=")
        start, end = (HEADER, BOLD) if index == 0 else ("", "")
        lines = max(math.ceil(len(c) / b) for c, b in zip(row, budget, strict=True))
        for k in range(lines):
            out += bar
            for c, b in zip(row, budget, strict=True):
                piece = c[k * b : (k + 1) * b]
                out += f"{start}{piece}{end}{' ' * (b - len(piece))}{bar}"
            out += "\n"
        out += rule("=" if index == 0 else "-")
    return out


def data_dynamicity(dl: Iterable[Any]) -> dict[Any, int]:
    """Histogram of batch shapes over the whole loader; prints the table and the verdict."""
    import torch

    assert not (torch.distributed.is_available() and torch.distributed.is_initialized()), (
        "Expected 1x run, but torch being used in distributed fashion"
    )
    hist: dict[Any, int] = {}
    for batch in dl:
        key = get_shape(batch)
        hist[key] = hist.get(key, 0) + 1
    ranked = sorted(hist.items(), key=lambda kv: -kv[1])
    print(table(["Shape", "Count"], [[k, v] for k, v in ranked]))
    print(f"Number of unique shapes:  {len(hist)}")
    print(verdict(len(hist)))
    return hist


def const_shape_dataloader(dl: Iterable[Any], maxlen: int) -> Any:
    """A `DataLoader(list, batch_size=None)` of the first `maxlen` batches of one shape (the
    first shape to reach `maxlen`, else the most common shape)."""
    from torch.utils.data import DataLoader

    by_shape: dict[Any, list[Any]] = {}
    chosen: Any = None
    for batch in dl:
        key = get_shape(batch)
        bucket = by_shape.setdefault(key, [])
        bucket.append(batch)
        if len(bucket) >= maxlen:
            chosen = key
            break
    if chosen is None and by_shape:
        chosen = max(by_shape, key=lambda k: len(by_shape[k]))
    batches = by_shape.get(chosen, [])[:maxlen]
    return DataLoader(batches, batch_size=None)  # type: ignore[arg-type]


# --- detect_recompilation_auto_model ---------------------------------------------------------


class _DynInfo:
    def __init__(self, name: str, level: int) -> None:
        self.name = name
        self.level = level
        self.in_hashes: set[int] = set()
        self.out_hashes: set[int] = set()
        self.step = 0


def detect_recompilation_auto_model(
    model: Any, mdlname: str = "Net", waittime: float = 1, csv_out: str = "out"
) -> Any:
    """Wrap every module's forward to detect which modules recompile (lazy mode only).

    Per call: hash the inputs, `mark_step`, sleep, run the forward inside
    `metric_localcontext("graph_compilation")`, `mark_step`, sleep, hash the outputs; a
    `TotalNumber` != 0 is a recompilation of that module. Adds `model.raw_logs()` and
    `model.analyse_dynamicity()`."""
    import inspect

    rt = state.RT
    if rt is None or rt.config.mode != "lazy":
        raise RuntimeError("detect_recompilation_auto_model works in lazy mode only")
    logs: list[str] = []
    wrapped: set[int] = set()

    def wrap(mod: Any, name: str, level: int) -> None:
        if id(mod) in wrapped:  # a module shared by two parents keeps its first hooks
            return
        wrapped.add(id(mod))
        info = _DynInfo(name, level)
        mod._dynshape_info = info
        indent = "  " * level
        where = inspect.getmodule(type(mod))
        logs.append(
            f"{indent}{TAG} Registering hooks for {name} of type {type(mod)} probably defined "
            f"here {where}"
        )
        orig: Callable[..., Any] = mod.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            inp = input_hash((args, kwargs))
            mark_step()
            time.sleep(waittime)
            with metric_localcontext("graph_compilation") as gc_metric:
                out = orig(*args, **kwargs)
                mark_step()
                time.sleep(waittime)
            outh = input_hash(out)
            num = dict(gc_metric.stats()).get("TotalNumber", 0)
            new_in = "" if inp in info.in_hashes else "Found new input signature "
            new_out = "" if outh in info.out_hashes else "Found new output signature "
            info.in_hashes.add(inp)
            info.out_hashes.add(outh)
            step = ""
            if level == 0:
                step = f"step:{info.step}"
                info.step += 1
            logs.append(
                f"{indent}{TAG}[{name}]{step} {new_in}{new_out}num_graphs:{num} "
                + ("Recompilation!" if num else "")
            )
            return out

        mod.forward = forward
        for child_name, child in mod.named_children():
            wrap(child, f"{name}/{child_name}", level + 1)

    wrap(model, mdlname, 0)
    model.raw_logs = lambda: list(logs)
    model.analyse_dynamicity = lambda: analyse_dynamicity(model, logs, csv_out)
    return model


def _parse(logs: list[str]) -> list[dict[str, Any]]:
    """One record per forward call: level, name, step (top level), new in/out, recompiled."""
    records: list[dict[str, Any]] = []
    for raw in logs:
        line = raw.lstrip(" ")
        if not line.startswith(TAG + "[") or "num_graphs:" not in line:
            continue
        level = (len(raw) - len(line)) // 2
        name = line[len(TAG) + 1 : line.index("]", len(TAG))]
        rest = line[line.index("]", len(TAG)) + 1 :]
        step = int(rest[5:].split()[0]) if rest.startswith("step:") else None
        records.append(
            {
                "level": level,
                "name": name,
                "step": step,
                "new_in": "Found new input signature" in rest,
                "new_out": "Found new output signature" in rest,
                "recompiled": rest.rstrip().endswith("Recompilation!"),
            }
        )
    return records


def _registered(logs: list[str]) -> dict[str, tuple[str, str]]:
    """Each module's (class, file) from its registration line, as the bridge parses them:
    `<class 'a.B'>` -> `a.B`, `<module 'a' from '/f.py'>` -> `/f.py`."""
    out: dict[str, tuple[str, str]] = {}
    head = f"{TAG} Registering hooks for "
    for raw in logs:
        line = raw.strip()
        if not line.startswith(head):
            continue
        name, _, tail = line[len(head) :].partition(" of type ")
        cls, _, where = tail.partition(" probably defined here ")
        cls = cls.strip().removeprefix("<class").strip(">").strip().strip("'")
        _, found, path = where.strip().strip("<>").partition(" from ")
        out[name.strip()] = (cls, path.strip("'") if found else where)
    return out


def _tree(names: list[str]) -> dict[str, list[str]]:
    """Children of every module path (`a/b/c` makes a -> a/b -> a/b/c), in the order seen."""
    children: dict[str, list[str]] = {}
    for name in names:
        parts = name.split("/")
        for i in range(len(parts) - 1, 0, -1):
            parent, child = "/".join(parts[:i]), "/".join(parts[: i + 1])
            kids = children.setdefault(parent, [])
            children.setdefault(child, [])
            if child not in kids:
                kids.append(child)
    return children


def _dynamic_modules(children: dict[str, list[str]], root: str, suspects: set[str]) -> list[str]:
    """The bridge's `_process_tree`: a suspect (recompiled on an input seen before) is dynamic
    itself unless its LAST child was found dynamic (the bridge's loop keeps only that one)."""
    found: list[str] = []

    def visit(node: str) -> bool:
        last_child_dynamic = False
        for child in children.get(node, []):
            last_child_dynamic = visit(child)
        dynamic = node in suspects and not last_child_dynamic
        if dynamic:
            found.append(node)
        return dynamic

    visit(root)
    return found


def _comment(rec: dict[str, Any]) -> str:
    if rec["new_in"]:
        return COMMENT_NEW_INPUT
    return COMMENT_DYN_OPS_OUT if rec["new_out"] else COMMENT_DYN_OPS


def analyse_dynamicity(model: Any, logs: list[str], csv_out: str) -> tuple[list[Any], list[Any]]:
    """Print the two tables and write `<csv_out>_1.csv` and `<csv_out>_2.csv`."""
    records = _parse(logs)
    classes = _registered(logs)
    # a child's forward returns before its parent's: each top-level step owns the recompiling
    # calls logged before it; the module tree is made of the modules that compiled in step 0
    steps: dict[int, list[dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    first_step: list[str] = []
    pending: list[dict[str, Any]] = []
    top_seen = False
    for rec in records:
        if rec["recompiled"]:
            pending.append(rec)
            counts[rec["name"]] = counts.get(rec["name"], 0) + 1
            if not top_seen and rec["name"] not in first_step:
                first_step.append(rec["name"])
        if rec["level"] == 0:
            top_seen = True
            if pending:
                steps[rec["step"]] = pending
            pending = []
    suspects = {r["name"] for rows in steps.values() for r in rows if not r["new_in"]}
    root = next((r["name"] for r in records if r["level"] == 0), "")
    dynamic = _dynamic_modules(_tree(first_step), root, suspects)
    rows1: list[list[Any]] = []
    for step in sorted(steps):
        for r in steps[step]:
            comment = _comment(r)
            if comment != COMMENT_NEW_INPUT and r["name"] not in dynamic:
                comment += DYNAMIC_CHILD
            cls, loc = classes.get(r["name"], ("", ""))
            rows1.append([step, r["name"], r["new_in"], r["new_out"], cls, loc, comment])
    rows2: list[list[Any]] = [[k, v] for k, v in sorted(counts.items(), key=lambda kv: -kv[1])]
    h1 = ["Step", "Recompiling modules", "New in", "New out", "Class", "Location", "Comment"]
    h2 = ["Module name", "Recompile count"]
    print(table(h1, rows1))
    print(table(h2, rows2, 80))
    for path, header, table_rows in (
        (f"{csv_out}_1.csv", h1, rows1),
        (f"{csv_out}_2.csv", h2, rows2),
    ):
        with open(path, "w", encoding="utf-8") as f:
            f.write(",".join(header) + "\n")
            for row in table_rows:
                f.write(",".join(str(c) for c in row) + "\n")
    return rows1, rows2
