"""Advice per device: the one place a finding's "what to do" is written.

Each topic has a text per device family (`device.DeviceKind`), or None where the finding does
not apply to that device (no HPU graphs on a GPU, no CUDA graphs on a Gaudi, no autocast
lists of Gaudi on an A100): analyses then raise no finding at all. Texts are `str.format`
templates filled with the finding's own values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from hpuprof.analysis.device import DeviceKind, TraceDevice

_SYNCS = "remove host syncs (.item(), print, .cpu()) from the step"
_STATIC_FORMS = (
    "replace them with static forms (x * mask instead of x[mask], torch.where with three arguments)"
)

ADVICE: Final[Mapping[str, Mapping[DeviceKind, str | None]]] = {
    "host_bound_graphs": {
        "hpu": "wrap the forward in an HPU graph (habana_frameworks.torch.hpu.wrap_in_hpu_graph)",
        "cuda": "capture the step in a CUDA graph (torch.cuda.graphs)",
        "rocm": "capture the step in a HIP graph (torch.cuda.graphs works on ROCm)",
        **dict.fromkeys(("gpu", "mtia", "xpu", "cpu"), None),
    },
    "host_bound_compile": {
        "hpu": "use torch.compile(backend='hpu_backend')",
        **dict.fromkeys(("cuda", "rocm"), "use torch.compile with mode='reduce-overhead'"),
        **dict.fromkeys(("gpu", "mtia", "xpu"), "fuse small ops (torch.compile)"),
        "cpu": None,
    },
    "host_bound": {
        **dict.fromkeys(
            ("hpu", "cuda", "rocm", "gpu", "mtia", "xpu"),
            f"{_SYNCS}; feed data with more DataLoader workers",
        ),
        "cpu": None,
    },
    "sync_wait": {
        **dict.fromkeys(
            ("hpu", "cuda", "rocm", "gpu", "mtia", "xpu"),
            "avoid host reads of device values inside the step (.item(), .cpu(), printing "
            "tensors); accumulate metrics on the device and read them rarely",
        ),
        "cpu": None,
    },
    "data_loading": {
        "hpu": "raise DataLoader num_workers, pin_memory and prefetch_factor; use the Habana "
        "DataLoader (habana_dataloader) where the dataset is supported",
        **dict.fromkeys(
            ("cuda", "rocm", "gpu", "mtia", "xpu"),
            "raise DataLoader num_workers, pin_memory=True and prefetch_factor; copy batches "
            "with non_blocking=True so the copy overlaps compute",
        ),
        "cpu": "raise DataLoader num_workers and prefetch_factor so loading overlaps compute",
    },
    "tpc_bound": {
        "hpu": "{kernels}: elementwise/normalization ops dominate TPC time: fuse them "
        "(torch.compile, FusedSDPA) or run them in bf16",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "tpc_bound_matmul": {
        "hpu": "{kernels}: matmuls placed on TPC, not MME (too small for MME): batch them into "
        "larger matmuls (a larger batch, fused projections) so that MME takes them, and run "
        "them in bf16",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "tpc_bound_optimizer": {
        "hpu": "{kernels}: optimizer updates dominate TPC time: use a fused optimizer "
        "(habana_frameworks.torch.hpex.optimizers.FusedAdamW and kin) or torch.compile the "
        "optimizer step",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "recompile": {
        "hpu": "pad inputs to a few fixed sizes{bucketing}, keep Python scalars out of the graph "
        "(pass tensors), or mark the dimension dynamic for torch.compile",
        **dict.fromkeys(
            ("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"),
            "pad inputs to a few fixed sizes{bucketing}, or compile with dynamic=True / "
            "torch._dynamo.mark_dynamic on the varying dimension",
        ),
    },
    "dynamic_ops": {
        "hpu": f"{_STATIC_FORMS}, move them to CPU explicitly, or isolate them with mark_step()",
        **dict.fromkeys(
            ("cuda", "rocm", "gpu", "mtia", "xpu"),
            "each one makes the host wait for the device to learn the output size: "
            f"{_STATIC_FORMS}, or use nonzero_static where the size is bounded",
        ),
        "cpu": None,
    },
    "bucketing": {
        "hpu": "pad {target} up to the next of {boundaries}",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "autocast": {
        "hpu": 'run the forward under torch.autocast(device_type="hpu", dtype=torch.bfloat16)',
        "cuda": 'run the forward under torch.autocast(device_type="cuda", dtype=torch.bfloat16) '
        "(float16 with a GradScaler on GPUs without bf16)",
        "rocm": 'run the forward under torch.autocast(device_type="cuda", dtype=torch.bfloat16) '
        '(ROCm builds of PyTorch use the "cuda" device type)',
        "gpu": "run the forward under torch.autocast with a 16-bit dtype for this device",
        "mtia": "run the forward under torch.autocast with a 16-bit dtype for this device",
        "xpu": 'run the forward under torch.autocast(device_type="xpu", dtype=torch.bfloat16)',
        "cpu": 'run the forward under torch.autocast(device_type="cpu", dtype=torch.bfloat16) '
        "where the CPU computes bf16 natively (AMX, AVX512-BF16)",
    },
    "lower_precision_list": {
        "hpu": "check they run inside the autocast region; pass bf16 inputs; or add them to "
        "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "fp32_list": {
        "hpu": "keep losses, softmax-like reductions and exp/log in fp32 (autocast's fp32 list, "
        "PT_HPU_AUTOCAST_FP32_OPS_LIST)",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "silent_dtype": {
        "hpu": "Gaudi computes these in the narrower type: cast explicitly if values need the "
        "range",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "fallback": {
        "hpu": "{op} has no HPU kernel: replace it with supported ops, move it out of the step, "
        "or run it on CPU explicitly once (PT_HPU_LOG_MOD_MASK / the cpu_fallback metric "
        "shows all of them)",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "fallback_dtype": {
        "hpu": "{op} has HPU kernels for {supported} but not for {dtype}: cast its input to one "
        "of those before the call (a bool tensor to int32 or float), or keep the value on the "
        "host",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "graph_cache_miss": {
        "hpu": "keep input shapes and non-tensor arguments fixed (bucket/pad), and do not "
        "toggle autocast between calls",
        **dict.fromkeys(("cuda", "rocm", "gpu", "mtia", "xpu", "cpu"), None),
    },
    "graph_candidates": {
        "hpu": "wrap them with habana_frameworks.torch.hpu.wrap_in_hpu_graph(module) to replay "
        "them without per-op host overhead",
        "cuda": "capture them with torch.cuda.make_graphed_callables to replay them without "
        "per-kernel launch overhead",
        "rocm": "capture them with torch.cuda.make_graphed_callables (HIP graphs on ROCm) to "
        "replay them without per-kernel launch overhead",
        **dict.fromkeys(("gpu", "mtia", "xpu", "cpu"), None),
    },
}


def advise(topic: str, device: TraceDevice, **values: Any) -> str | None:
    """The advice on `topic` for `device`, filled with `values`; None where it does not apply."""
    text = ADVICE[topic].get(device.kind)
    return None if text is None else text.format(**values)


def host_bound_advice(device: TraceDevice, graph_replays: int, compiled_regions: int) -> str | None:
    """The host-bound advice for `device`, leaving out what the run already does: no graph
    capture for a run that replays graphs (`graph_replays`), no torch.compile for one that runs
    compiled regions (`compiled_regions`); None where the finding does not apply."""
    rest = advise("host_bound", device)
    if rest is None:
        return None
    cuts: list[str] = []
    done: list[str] = []
    around: list[str] = []
    for topic, already, words, what in (
        (
            "host_bound_graphs",
            graph_replays,
            f"replays graphs ({graph_replays:,} replays)",
            "the graph replays",
        ),
        ("host_bound_compile", compiled_regions, "uses torch.compile", "the compiled regions"),
    ):
        text = advise(topic, device)
        if text is not None:
            (done if already else cuts).append(words if already else text)
            if already:
                around.append(what)
    head = f"{' or '.join(cuts)} to cut per-op host overhead; " if cuts else ""
    note = (
        f"the run already {' and '.join(done)}: cut the host work left around "
        f"{' and '.join(around)}; "
        if done
        else ""
    )
    return note + head + rest
