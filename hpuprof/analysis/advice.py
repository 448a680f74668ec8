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
_GPU_GRAPH = (
    "capture the step in a CUDA graph (torch.cuda.graphs, or torch.compile with "
    "mode='reduce-overhead') to cut per-kernel launch overhead; "
)
_FUSE = "fuse small ops (torch.compile) to cut per-op launch overhead; "
_STATIC_FORMS = (
    "replace them with static forms (x * mask instead of x[mask], torch.where with three arguments)"
)

ADVICE: Final[Mapping[str, Mapping[DeviceKind, str | None]]] = {
    "host_bound": {
        "hpu": "wrap the forward in an HPU graph (habana_frameworks.torch.hpu.wrap_in_hpu_graph) "
        "or use torch.compile(backend='hpu_backend') to cut per-op host overhead; "
        f"{_SYNCS}; feed data with more DataLoader workers",
        "cuda": f"{_GPU_GRAPH}{_SYNCS}; feed data with more DataLoader workers",
        "rocm": "capture the step in a HIP graph (torch.cuda.graphs works on ROCm, or "
        "torch.compile with mode='reduce-overhead') to cut per-kernel launch overhead; "
        f"{_SYNCS}; feed data with more DataLoader workers",
        "gpu": f"{_FUSE}{_SYNCS}; feed data with more DataLoader workers",
        "mtia": f"{_FUSE}{_SYNCS}; feed data with more DataLoader workers",
        "xpu": f"{_FUSE}{_SYNCS}; feed data with more DataLoader workers",
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
        "hpu": "elementwise/normalization ops dominate: fuse them (torch.compile, fused "
        "optimizers, FusedSDPA) or run them in bf16",
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
