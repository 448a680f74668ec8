"""Host cost of the hpusim extensions, each against a baseline measured in the same run.

    python bench/bench_extensions.py [--calls 200] [--repeats 9]

1. HPU-graph replay vs per-op dispatch (lazy mode, recording on): an MLP inference forward
   (16->64->64->10, batch 8) run plainly through the emulator, and the same module wrapped with
   `wrap_in_hpu_graph` (captured once, then replayed). The replay re-runs the captured ops on
   the inner CPU tensors without per-op dispatch, so this is the emulator's own host cost of a
   replay; it is NOT a claim about real Gaudi host time (the modeled timeline shows that).
2. Habana autocast region overhead: forward+backward of the same MLP under
   `torch.autocast("hpu", bfloat16)` on the emulator vs `torch.autocast("cpu", bfloat16)` on
   plain CPU tensors (the probe's design: CPU mirror + function mode inside the region).
Figures are the best of the repeats (round-robin), torch threads = 1.
"""

from __future__ import annotations

import argparse
import copy
import gc
import time
from collections.abc import Callable

import torch


def _best(fns: dict[str, Callable[[], None]], repeats: int) -> dict[str, float]:
    times: dict[str, list[int]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter_ns()
            fn()
            times[name].append(time.perf_counter_ns() - t0)
    return {k: float(min(v)) for k, v in times.items()}


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args()
    torch.set_num_threads(1)
    import hpusim
    from hpusim.hpu_graphs import wrap_in_hpu_graph
    from hpusim.sink import get_sink

    hpusim.enable(mode="lazy")
    sink = get_sink()
    plain = _mlp().to("hpu").eval()
    graphed = wrap_in_hpu_graph(copy.deepcopy(plain))
    x = torch.randn(8, 16, device="hpu")

    def run(m: torch.nn.Module) -> Callable[[], None]:
        def go() -> None:
            with torch.no_grad():
                for _ in range(a.calls):
                    m(x)
                hpusim.mark_step()
            sink.drain()

        return go

    run(graphed)()  # capture
    t = _best({"dispatch": run(plain), "replay": run(graphed)}, a.repeats)
    per_d, per_r = t["dispatch"] / a.calls / 1e3, t["replay"] / a.calls / 1e3
    print(f"MLP forward, emulated per-op dispatch: {per_d:8.1f} us/call (baseline)")
    print(f"MLP forward, HPU-graph replay:         {per_r:8.1f} us/call")
    print(f"  replay / dispatch = {per_r / per_d:.2f}x")

    hpusim.disable()
    hpusim.enable(mode="eager")
    sink = get_sink()
    cpu_model = _mlp()
    hpu_model = copy.deepcopy(cpu_model).to("hpu")
    xc = torch.randn(8, 16)
    xh = xc.to("hpu")

    def train(m: torch.nn.Module, inp: torch.Tensor, device: str) -> Callable[[], None]:
        def go() -> None:
            for _ in range(a.calls // 4):
                with torch.autocast(device, dtype=torch.bfloat16):
                    loss = m(inp).float().pow(2).mean()
                loss.backward()
            sink.drain()

        return go

    t = _best({"cpu": train(cpu_model, xc, "cpu"), "hpu": train(hpu_model, xh, "hpu")}, a.repeats)
    n = a.calls // 4
    per_c, per_h = t["cpu"] / n / 1e3, t["hpu"] / n / 1e3
    print(f"bf16 fwd+bwd, plain CPU autocast('cpu'): {per_c:8.1f} us/step (baseline)")
    print(f"bf16 fwd+bwd, emulated autocast('hpu'):  {per_h:8.1f} us/step")
    print(f"  emulated / CPU = {per_h / per_c:.2f}x")
    hpusim.disable()


if __name__ == "__main__":
    main()
