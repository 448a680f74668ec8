"""`habana_frameworks.torch.utils.experimental` (emulated): the dynamic-shape tools of gaudi.md
2.1-2.3: `data_dynamicity`, `detect_recompilation_auto_model`, `const_shape_dataloader`.

Output strings follow gaudi.md exactly where it records them (verdict lines, log-line formats,
CSV columns, comment strings). The table drawing (120 wide, `=`/`-` borders, `|` separators,
`\\033[96m` borders, `\\033[91m` header) follows its description; the exact column padding of
the bridge's table is not recorded there, so ours is our own layout.
"""

from __future__ import annotations

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
    """A colored text table `width` characters wide with equal columns."""
    n = len(headers)
    col = (width - (n + 1)) // n
    cols = [col] * (n - 1) + [width - (n + 1) - col * (n - 1)]  # the last takes the rest
    rule_eq = f"{BORDER}{'=' * width}{RESET}"
    rule_dash = f"{BORDER}{'-' * width}{RESET}"
    bar = f"{BORDER}|{RESET}"

    def line(cells: list[Any], color: str = "") -> str:
        parts = []
        for c, w in zip(cells, cols, strict=True):
            text = f" {c}"[:w].ljust(w)
            parts.append(f"{color}{text}{RESET}" if color else text)
        return bar + bar.join(parts) + bar

    out = [rule_eq, line(headers, HEADER), rule_eq]
    for r in rows:
        out.append(line(r))
        out.append(rule_dash)
    if rows:
        out[-1] = rule_eq
    return "\n".join(out)


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
    if hist:
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

    def wrap(mod: Any, name: str, level: int) -> None:
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
            new_in = inp not in info.in_hashes
            new_out = outh not in info.out_hashes
            info.in_hashes.add(inp)
            info.out_hashes.add(outh)
            text = f"{indent}{TAG}[{name}]"
            if level == 0:
                text += f"step:{info.step}"
                info.step += 1
            if new_in:
                text += " Found new input signature"
            if new_out:
                text += " Found new output signature"
            text += f" num_graphs:{num}"
            if num:
                text += " Recompilation!"
            logs.append(text)
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


def _comment(rec: dict[str, Any]) -> str:
    if rec["new_in"]:
        return COMMENT_NEW_INPUT
    return COMMENT_DYN_OPS_OUT if rec["new_out"] else COMMENT_DYN_OPS


def analyse_dynamicity(model: Any, logs: list[str], csv_out: str) -> tuple[list[Any], list[Any]]:
    """Print the two tables and write `<csv_out>_1.csv` and `<csv_out>_2.csv`."""
    records = _parse(logs)
    classes: dict[str, tuple[str, str]] = {}
    for raw in logs:
        line = raw.strip()
        if line.startswith(f"{TAG} Registering hooks for "):
            body = line[len(f"{TAG} Registering hooks for ") :]
            name, _, tail = body.partition(" of type ")
            cls, _, loc = tail.partition(" probably defined here ")
            classes[name] = (cls, loc)
    # records arrive child-first (a child's forward returns before its parent's): group each
    # top-level step with the child calls logged before it
    rows1: list[list[Any]] = []
    counts: dict[str, int] = {}
    pending: list[dict[str, Any]] = []
    for rec in records:
        pending.append(rec)
        if rec["level"] != 0:
            continue
        step = rec["step"]
        recompiled = [r for r in pending if r["recompiled"]]
        names = {r["name"] for r in recompiled}
        for r in recompiled:
            comment = _comment(r)
            child_dyn = any(n != r["name"] and n.startswith(r["name"] + "/") for n in names)
            if child_dyn and comment != COMMENT_NEW_INPUT:
                comment += DYNAMIC_CHILD
            cls, loc = classes.get(r["name"], ("", ""))
            rows1.append([step, r["name"], r["new_in"], r["new_out"], cls, loc, comment])
            counts[r["name"]] = counts.get(r["name"], 0) + 1
        pending = []
    rows2: list[list[Any]] = [[k, v] for k, v in sorted(counts.items(), key=lambda kv: -kv[1])]
    h1 = ["Step", "Recompiling modules", "New in", "New out", "Class", "Location", "Comment"]
    h2 = ["Module name", "Recompile count"]
    print(table(h1, rows1))
    print(table(h2, rows2))
    for path, header, table_rows in (
        (f"{csv_out}_1.csv", h1, rows1),
        (f"{csv_out}_2.csv", h2, rows2),
    ):
        with open(path, "w", encoding="utf-8") as f:
            f.write(",".join(header) + "\n")
            for row in table_rows:
                f.write(",".join(str(c) for c in row) + "\n")
    return rows1, rows2
