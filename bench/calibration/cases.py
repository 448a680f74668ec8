"""Published Gaudi 2 / Gaudi 3 results and how `hpuprof predict` reproduces each one.

Every `Case` names its source, the workload as published (model, cards, precision, batch,
sequence lengths) and the prediction: the script `hpuprof predict` runs (one or more runs) and
the arithmetic that turns the predicted step times into the published metric. Nothing here is
fitted on the row it predicts: the device profile's constants are shared by every row, and the
one quantity fitted on published rows (the image-classification recipe's data loader, below) is
fitted leave-one-out and marked in `Case.fitted`.
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

OPTIMUM_HABANA = (
    "https://github.com/huggingface/optimum-habana/blob/b0108ba15b6b4b25f2156499150b1aa89d4a2eac/"
    "tests/baselines/fixture/tests/test_examples.json"
)
"""optimum-habana v1.20.0's published example-test baselines (`train_samples_per_second` per
Gaudi generation); the recipes: tests/test_examples.py and tests/configs/examples/*.json at the
same commit (lazy mode, `--throughput_warmup_steps 3`, the model's Habana gaudi_config: fused
AdamW, fused clip norm, bf16 autocast)."""
MLPERF_RESNET = (
    "https://github.com/mlcommons/training_results_v3.1/blob/main/Intel-HabanaLabs/results/"
    "HLS-Gaudi2-PT/resnet/result_0.txt"
)
"""MLPerf Training v3.1, Intel-HabanaLabs, ResNet-50 on 8 Gaudi 2 (PyTorch): global batch 2048;
the 4 epochs of the block from `block_start` (epoch 8, time_ms 1696338824744) to `eval_start`
(epoch 11, 1696338934882) took 110.138 s: 4 x 1,281,167 images / 110.138 s = 46,530 img/s."""
MLPERF_BERT = (
    "https://github.com/mlcommons/training_results_v3.1/blob/main/Intel-HabanaLabs/results/"
    "HLS-Gaudi2-PT/bert/result_0.txt"
)
"""MLPerf Training v3.1, Intel-HabanaLabs, BERT on 8 Gaudi 2 (PyTorch): global batch 448
sequences, each block 335 steps; block 10 (time_ms 1696102924958 to 1696102976635) took
51.677 s: 154.3 ms per step, its evaluation included."""

LOADER = (
    "the recipe's data loader (1 worker: decode, random-resized-crop to 224, flip, normalize "
    "each 32 x 32 CIFAR-10 image on the host) is a pipeline stage beside the training step: the "
    "slower sets the rate; its time per image is FITTED leave-one-out on the other "
    "image-classification row of the same server"
)
LOADER_FIT = "loader_s_per_image"
"""The fitted quantity of the image-classification rows (`Case.fitted`)."""
MRPC = (3668, 3)
"""GLUE MRPC's training split (3,668 sentence pairs: the GLUE data set's card, nyu-mll/glue on
the Hugging Face Hub) and the test's `num_train_epochs` 3
(tests/configs/examples/bert_large_uncased_whole_word_masking.json at OPTIMUM_HABANA's commit)."""
MRPC_NOTE = (
    "samples/s as the Trainer counts them: 3,668 x 3 less the 3 warmup steps' samples, over the "
    "42 padded steps of 256 that follow (`counted_share`: x 0.952)"
)
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
    family: str = "llm"
    """"llm" or the non-LLM workload family ("vision", "encoder")."""
    fitted: tuple[str, ...] = ()
    """Constants fitted on this row (profile fields, docs/device-model.md, or this module's
    `LOADER_FIT`): the row is then not held out, and its reported prediction uses those
    constants fitted on the other rows."""


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


def loader_s_per_image(device: str, leave_out: str) -> float:
    """Host seconds per image of optimum-habana's image-classification data loader on the
    server of `device`, FITTED on that server's other image-classification rows (never on
    `leave_out`, the row it predicts): the mean of their published seconds per sample.

    Why their published rate is the loader's: `train_samples_per_second` counts the steady
    steps only (optimum-habana's `speed_metrics` drops the `--throughput_warmup_steps 3`
    steps and the log / evaluate / save time), and the recipe runs its image pipeline in ONE
    DataLoader worker (`--dataloader_num_workers 1`), which prepares the next batch while the
    step runs: the steady rate is that of the slower of the two, and on every one of these rows
    the predicted step is shorter than the published step (ViT 67 / 39 ms and Swin 123 / 77 ms
    on Gaudi 2 / 3 against 144 / 116 and 190 / 166 ms). The pipeline's work is per image and
    the same for every model (the same data set, transforms and 224 x 224 output), and the
    published time per image agrees across models on each server (Gaudi 2: 1.13 ms ViT, 1.19
    ms Swin; Gaudi 3: 0.91 and 1.04 ms) while the devices' step times differ 2-3x. The two
    servers' host CPUs differ (Intel's reference HLS-Gaudi2 has two Xeon Platinum 8380 at 2.3
    GHz, HLS-Gaudi3 two Xeon Platinum 8480+ at 2.0 GHz: the System Configuration of Intel's
    Model Performance pages, G2_INFER and G3_INFER; optimum-habana does not name its test
    machines), so each server's rows fit only its own."""
    others = [
        c for c in CASES if LOADER_FIT in c.fitted and c.device == device and c.id != leave_out
    ]
    if not others:
        raise ValueError(f"no other image-classification row on {device} to fit the loader on")
    return sum(1.0 / c.published for c in others) / len(others)


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


def hf_train_case(
    id: str,
    device: str,
    model: str,
    batch: int,
    published: float,
    workload: str,
    seq: int = 0,
    pipelining: bool = False,
    family: str = "encoder",
    cards: int = 1,
    note: str = "",
    image_loader: bool = False,
    dataset: tuple[int, int] = (0, 0),
    compiled: bool = False,
) -> Case:
    """An optimum-habana example test on `cards` cards (data parallel): samples/s of the
    steady optimizer steps (the median after the steps that compiled); with `image_loader`,
    of the slower of that step and the data loader's batch (`loader_s_per_image`); with
    `dataset` (examples, epochs) on one card, as the Trainer counts them (`counted_share`);
    `compiled`: the test runs the model under `torch.compile` (hpu_backend, eager mode)."""
    args = ["--model", model, "--batch", str(batch), "--steps", "4"]
    if compiled:
        args.append("--torch-compile")
    if seq:
        args += ["--seq", str(seq)]
    if pipelining:
        args.append("--pipelining-fwd-bwd")

    def predict(r: Runs) -> float:
        step = float(r["train"]["step_time_s"])
        if image_loader:
            step = max(step, batch * loader_s_per_image(device, id))
        share = counted_share(*dataset, batch) if dataset[0] and cards == 1 else 1.0
        return cards * batch / step * share

    shape = f"batch {batch} / card" + (f", seq {seq}" if seq else ", 224 x 224")
    mode = "torch.compile (hpu_backend), eager mode" if compiled else "lazy mode"
    recipe = f"optimum-habana GaudiTrainer recipe: {mode}, FusedAdamW, FusedClipNorm, bf16"
    predict_args = (("--cards", str(cards)) if cards > 1 else ()) + (
        ("--mode", "compile") if compiled else ()
    )
    return Case(
        id, device, cards, workload, "bf16", shape, published, "samples/s", OPTIMUM_HABANA,
        "train_hf.py", {"train": args}, predict, f"{recipe}{'; ' + note if note else ''}",
        predict_args, family=family,
        fitted=(LOADER_FIT,) if image_loader else (),
    )  # fmt: skip


WARMUP_STEPS = 3
"""optimum-habana's example tests: `--throughput_warmup_steps 3` (tests/test_examples.py:726 at
OPTIMUM_HABANA's commit)."""


def counted_share(examples: int, epochs: int, batch: int) -> float:
    """The published `train_samples_per_second` over the samples one card really trained on per
    second, in optimum-habana's single-card lazy-mode recipe.

    The Trainer counts `len(dataset) x epochs` samples less the warmup steps' (transformers
    4.55 `Trainer.num_examples` and `set_initial_training_values`; optimum-habana
    `GaudiTrainer._inner_training_loop`: `num_train_samples - throughput_warmup_steps x
    total_train_batch_size`), while its sampler pads each epoch to whole batches so that lazy
    mode never compiles a partial batch (`GaudiTrainer._get_train_sampler`: `num_samples +=
    per_device_train_batch_size - num_samples % per_device_train_batch_size` when not
    distributed): the steps after warmup train more samples than are counted. MRPC (3,668
    examples, batch 256): 15 steps an epoch, 10,236 samples counted over 42 steps of 256."""
    steps = math.ceil(examples / batch) * epochs - WARMUP_STEPS
    return (examples * epochs - WARMUP_STEPS * batch) / (steps * batch)


def _mlperf_bert(r: Runs) -> float:
    return 1e3 * float(r["train"]["step_time_s"])


def _mlperf_resnet(r: Runs) -> float:
    return 8 * 256 / float(r["train"]["step_time_s"])


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
        "attention as LLM Foundry's attn_impl torch with the ALiBi bias; FSDP traffic not modeled",
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
    generate_case("g3-gen-llama2-7b-2048-128", "gaudi3", "llama2-7b", 153, 2048, 128, 2029, G3_INFER),
    generate_case("g3-gen-llama31-8b-2048-2048", "gaudi3", "llama3-8b", 364, 2048, 2048, 7405, G3_INFER),
    generate_case("g3-gen-mistral-7b-2048-2048", "gaudi3", "mistral-7b", 44, 2048, 2048, 4970, G3_INFER),
    Case(
        "g2-mlperf-resnet50", "gaudi2", 8, "ResNet-50 training (MLPerf v3.1)", "bf16",
        "256 / card, 224 x 224, LARS", 46530, "img/s", MLPERF_RESNET, "train_resnet.py",
        {"train": ["--batch", "256", "--steps", "5"]}, _mlperf_resnet,
        "MLPerf Training v3.1 recipe: bf16, FusedLars, DDP over 8 cards", ("--cards", "8"),
        family="vision",
    ),
    Case(
        "g2-mlperf-bert", "gaudi2", 8, "BERT-large pre-training (MLPerf v3.1)", "bf16",
        "28 packed rows x 512 / card, LAMB", 154.3, "ms/step", MLPERF_BERT, "train_hf.py",
        {"train": ["--model", "bert-large-pretrain", "--batch", "28", "--seq", "512", "--steps", "4"]},
        _mlperf_bert,
        "MLPerf Training v3.1 recipe: phase 2 (seq 512), packed rows, FusedLamb, DDP over 8 cards",
        ("--cards", "8"), family="encoder",
    ),
    hf_train_case("g2-ft-bert-large-mrpc", "gaudi2", "bert-large", 256, 1100.598, "BERT-large fine-tuning (GLUE MRPC)", seq=128, note=MRPC_NOTE, dataset=MRPC),
    hf_train_case("g3-ft-bert-large-mrpc", "gaudi3", "bert-large", 256, 1674.509, "BERT-large fine-tuning (GLUE MRPC)", seq=128, note=MRPC_NOTE, dataset=MRPC),
    hf_train_case("g2-ft-roberta-large-squad", "gaudi2", "roberta-large", 32, 266.47, "RoBERTa-large fine-tuning (SQuAD)", seq=384, compiled=True),
    hf_train_case("g3-ft-roberta-large-squad", "gaudi3", "roberta-large", 32, 400.151, "RoBERTa-large fine-tuning (SQuAD)", seq=384, compiled=True),
    hf_train_case("g2-ft-roberta-large-squad-8", "gaudi2", "roberta-large", 32, 2138.366, "RoBERTa-large fine-tuning (SQuAD)", seq=384, compiled=True, cards=8),
    hf_train_case("g3-ft-roberta-large-squad-8", "gaudi3", "roberta-large", 32, 3146.332, "RoBERTa-large fine-tuning (SQuAD)", seq=384, compiled=True, cards=8),
    hf_train_case("g2-ft-vit-base", "gaudi2", "vit-base", 128, 886.623, "ViT-base fine-tuning (CIFAR-10)", pipelining=True, family="vision", note=LOADER, image_loader=True),
    hf_train_case("g3-ft-vit-base", "gaudi3", "vit-base", 128, 1100.39, "ViT-base fine-tuning (CIFAR-10)", pipelining=True, family="vision", note=LOADER, image_loader=True),
    hf_train_case("g2-ft-swin-base", "gaudi2", "swin-base", 160, 831.235, "Swin-base fine-tuning (CIFAR-10)", pipelining=True, family="vision", note=LOADER, image_loader=True),
    hf_train_case("g3-ft-swin-base", "gaudi3", "swin-base", 160, 949.371, "Swin-base fine-tuning (CIFAR-10)", pipelining=True, family="vision", note=LOADER, image_loader=True),
]  # fmt: skip
