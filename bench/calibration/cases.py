"""Published Gaudi 2 / Gaudi 3 results and how `hpuprof predict` reproduces each one.

Every `Case` names its source, the workload as published (model, cards, precision, batch,
sequence lengths) and the prediction: the script `hpuprof predict` runs (one or more runs) and
the arithmetic that turns the predicted step times into the published metric. Nothing here is
fitted per case: the device profile's constants are shared by every row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from models import CONFIGS, model_flops_per_token

G2_TRAIN = "https://intel.com/content/www/us/en/developer/platform/gaudi/model-performance-gaudi2-training.html"
G2_INFER = "https://intel.com/content/www/us/en/developer/platform/gaudi/model-performance-gaudi2-inference.html"
G3_INFER = "https://intel.com/content/www/us/en/developer/platform/gaudi/model-performance.html"
DATABRICKS = (
    "https://mvvvy.com/2024/01/05/llm-coaching-and-inference-with-intel-gaudi-2-ai-accelerators"
)
"""A copy of Databricks' blog 'LLM Training and Inference with Intel Gaudi 2 AI Accelerators'
(2024-01-04; the original is databricks.com/blog/llm-training-and-inference-intel-gaudi2-ai-
accelerators): 'over 260 TFLOP/s/device achieved when training MPT-7B on 8 x Gaudi 2'."""

Runs = dict[str, dict[str, Any]]
"""Run name -> `hpuprof predict --format json` output."""


@dataclass(frozen=True)
class Case:
    """One published result and its reproduction."""

    id: str
    device: str
    cards: int
    workload: str
    precision: str
    shape: str
    published: float
    unit: str
    source: str
    script: str
    runs: dict[str, list[str]]
    predict: Callable[[Runs], float]
    note: str = ""
    predict_args: Sequence[str] = field(default_factory=tuple)


def train_step_s(run: dict[str, Any], accum: int) -> float:
    """The optimizer step of `accum` micro-batches, from ONE predicted run of fewer: its last
    step's time plus the missing micro-batches, each as long as that step's last micro-batch.

    In lazy mode each micro-batch is one graph launched at its `mark_step`; once the device is
    the bottleneck, micro-batch k+1 is queued while k runs, so every micro-batch after the first
    adds its graph's device time (or its host time, were the host slower): the last
    micro-batch's segment of the step (`micro_step_times_s`, cut at the `mark_step`s) measures
    exactly that, inside one run. The host time of the first micro-batch, which a loaded
    machine makes noisy, enters once, not `accum` times."""
    micro = run["micro_step_times_s"][-1]  # the last (steady) step: micro-batches, optimizer
    ran = len(micro) - 1
    if ran < 2:
        raise ValueError("train_step_s needs a run of at least 2 micro-batches per step")
    return float(run["step_times_s"][-1]) + (accum - ran) * float(micro[ran - 1])


def train_case(
    id: str,
    model: str,
    cards: int,
    seq: int,
    global_batch: int,
    published: float,
    precision: str,
    source: str,
    micro: int = 1,
    metric: str = "tokens/s",
    note: str = "",
    tp: int = 1,
    recompute_attention: bool = False,
) -> Case:
    """A training row: `cards` cards as `cards / tp` data-parallel groups of `tp`
    tensor-parallel cards; each group runs `global_batch / (groups x micro)` micro-batches of
    `micro` x `seq` tokens per optimizer step."""
    groups = cards // tp
    accum = max(global_batch // (groups * micro), 1)
    args = [
        "--model", model, "--seq", str(seq), "--batch", str(micro), "--steps", "3",
        "--accum", "2", "--tp", str(tp),
    ]  # fmt: skip
    if precision == "fp8":
        args.append("--fp8")
    if recompute_attention:
        args.append("--recompute-attention")
    tokens = groups * accum * micro * seq  # per optimizer step, all cards

    if metric == "tokens/s":

        def predict(r: Runs) -> float:
            return tokens / train_step_s(r["train"], accum)

    else:  # model TFLOP/s per card

        def predict(r: Runs) -> float:
            rate = tokens / train_step_s(r["train"], accum) / cards
            return rate * model_flops_per_token(CONFIGS[model], seq) / 1e12

    parallel = f", TP {tp} x DP {groups}" if tp > 1 else ""
    return Case(
        id,
        "gaudi2",
        cards,
        f"{model} training",
        precision,
        f"GBS {global_batch}, micro-batch {micro}, seq {seq}{parallel}",
        published,
        metric,
        source,
        "train_decoder.py",
        {"train": args},
        predict,
        note,
        ("--cards", str(groups)),
    )


def _spans(input_len: int, output_len: int, bucket: int, samples: int) -> list[int]:
    """Decode positions sampled evenly over the generation, one per distinct bucket."""
    first, last = input_len + 1, input_len + output_len
    if samples <= 1 or last == first:
        return [last]
    picks = sorted({round(first + i * (last - first) / (samples - 1)) for i in range(samples)})
    seen: dict[int, int] = {}
    for p in picks:
        seen.setdefault(math.ceil(p / bucket), p)
    return sorted(seen.values())


def generate_case(
    id: str,
    device: str,
    model: str,
    batch: int,
    input_len: int,
    output_len: int,
    published: float,
    source: str,
    bucket: int = 128,
    samples: int = 5,
) -> Case:
    lengths = _spans(input_len, output_len, bucket, samples)
    args = [
        "--model", model, "--batch", str(batch), "--input-len", str(input_len),
        "--output-len", str(output_len), "--fp8", "--bucket", str(bucket),
        "--lengths", ",".join(str(x) for x in lengths),
    ]  # fmt: skip

    def predict(r: Runs) -> float:
        """Generated tokens / (prefill + every decode step), the decode step time
        interpolated linearly between the sampled cache lengths (steps alternate: the first of
        each shape compiles, the second is steady)."""
        times = r["gen"]["step_times_s"]  # init, prefill capture + 2 replays, decode pairs
        prefill = float(times[3])
        decode = [float(times[5 + 2 * i]) for i in range(len(lengths))]
        total = prefill
        for pos in range(input_len + 1, input_len + output_len + 1):
            total += _interp(lengths, decode, pos, bucket)
        return batch * output_len / total

    return Case(
        id,
        device,
        1,
        f"{model} generation",
        "fp8",
        f"batch {batch}, in {input_len} / out {output_len}",
        published,
        "tokens/s",
        source,
        "generate_decoder.py",
        {"gen": args},
        predict,
    )


def _interp(xs: list[int], ys: list[float], x: int, bucket: int) -> float:
    """The decode time at position x: that of its bucket's sample, or linear in the span
    between the samples of neighbouring buckets."""
    span = math.ceil(x / bucket)
    spans = [math.ceil(v / bucket) for v in xs]
    if span in spans:
        return ys[spans.index(span)]
    if span <= spans[0]:
        return ys[0]
    if span >= spans[-1]:
        return ys[-1]
    for i in range(len(spans) - 1):
        s0, s1 = spans[i], spans[i + 1]
        if s0 <= span <= s1:
            return ys[i] + (ys[i + 1] - ys[i]) * (span - s0) / (s1 - s0)
    return ys[-1]


def latency_case(id: str, model: str, input_len: int, published_ms: float, source: str) -> Case:
    args = [
        "--model", model, "--batch", "1", "--input-len", str(input_len), "--output-len", "1",
        "--fp8", "--prefill-only",
    ]  # fmt: skip

    def predict(r: Runs) -> float:
        return 1e3 * float(r["gen"]["step_times_s"][3])

    return Case(
        id,
        "gaudi2",
        1,
        f"{model} first-token latency",
        "fp8",
        f"batch 1, in {input_len}",
        published_ms,
        "ms",
        source,
        "generate_decoder.py",
        {"gen": args},
        predict,
        "the table gives the input length only: read as the prefill (first-token) latency",
    )


CASES: list[Case] = [
    train_case(
        "g2-train-llama2-7b", "llama2-7b", 8, 4096, 1024, 68464, "fp8", G2_TRAIN,
        recompute_attention=True,
        note="Megatron-DeepSpeed 1.18 recipe: TP1 PP1 DP8, ZeRO-1, selective recompute "
        "(HL_CKP_ACT=2); ZeRO-1 modeled as DDP",
    ),
    train_case(
        "g2-train-llama31-8b", "llama3-8b", 8, 8192, 128, 36309, "fp8", G2_TRAIN,
        tp=4, recompute_attention=True,
        note="Megatron-DeepSpeed 1.18 recipe: TP4 (sequence parallel) PP1 DP2, ZeRO-1, "
        "selective recompute (HL_CKP_ACT=2); ZeRO-1 modeled as DDP",
    ),
    train_case(
        "g2-train-mpt-7b", "mpt-7b", 8, 2048, 256, 260, "bf16", DATABRICKS, micro=4,
        metric="TFLOP/s per card",
        note="LLM Foundry; model TFLOP/s per card from the analytic FLOPs per token; "
        "ALiBi bias and FSDP traffic not modeled",
    ),
    generate_case("g2-gen-llama2-7b-128-128", "gaudi2", "llama2-7b", 1230, 128, 128, 13137, G2_INFER),
    generate_case("g2-gen-llama2-7b-128-2048", "gaudi2", "llama2-7b", 163, 128, 2048, 4791, G2_INFER),
    generate_case("g2-gen-llama2-7b-2048-128", "gaudi2", "llama2-7b", 94, 2048, 128, 1449, G2_INFER),
    generate_case("g2-gen-llama2-7b-2048-2048", "gaudi2", "llama2-7b", 81, 2048, 2048, 1953, G2_INFER),
    generate_case("g2-gen-llama31-8b-128-128", "gaudi2", "llama3-8b", 2429, 128, 128, 18201, G2_INFER),
    generate_case("g2-gen-mistral-7b-128-128", "gaudi2", "mistral-7b", 896, 128, 128, 18023, G2_INFER),
    latency_case("g2-lat-llama2-7b-128", "llama2-7b", 128, 7.62, G2_INFER),
    latency_case("g2-lat-llama2-7b-2048", "llama2-7b", 2048, 56.31, G2_INFER),
    generate_case("g3-gen-llama2-7b-128-128", "gaudi3", "llama2-7b", 1536, 128, 128, 19810, G3_INFER),
    generate_case("g3-gen-llama2-7b-2048-2048", "gaudi3", "llama2-7b", 75, 2048, 2048, 2734, G3_INFER),
    generate_case("g3-gen-llama31-8b-128-128", "gaudi3", "llama3-8b", 1536, 128, 128, 24310, G3_INFER),
    generate_case("g3-gen-mistral-7b-128-128", "gaudi3", "mistral-7b", 896, 128, 128, 24433, G3_INFER),
]  # fmt: skip
