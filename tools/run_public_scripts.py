"""Run public Gaudi scripts and test files, written by others, under the hpusim emulator.

    python tools/run_public_scripts.py --lightning-habana PATH --optimum-habana PATH
        --model-references PATH --gaudi-pytorch-bridge PATH [--only SUBSTRING] [--timeout 900]
        [--json OUT] [--before REF]

Each PATH is a checkout or a bare git directory of HabanaAI/Model-References,
Lightning-AI/lightning-Habana, huggingface/optimum-habana or HabanaAI/gaudi-pytorch-bridge
(its HEAD: 1.19); `--lightning-habana-ref` and
`--optimum-habana-ref` pick the releases matching the installed packages (pyproject's
`[clients]` extra: lightning-habana 1.6.0; optimum-habana 1.21.2, whose release is not in the
mirror: its HEAD, 1.21.0.dev0, is the default). Nothing of theirs is copied into this repository: the
folder of each script is extracted into a temporary directory and run there, unchanged, as its
documentation runs it, under `hpuprof record --emulate` (scripts) or under pytest with the shim
first on `PYTHONPATH` (test files).

Test files are lightning-habana's (its CI's `--hpus 1`, from the repository's top with its
`tests/conftest.py`), optimum-habana's, and the bridge's own (`tests/pytest_working` with the
bridge's conftest, `--mode lazy`, or `--mode compile` for `compile/`, as
`tools/run_bridge_tests.py` runs them). A test file completes when pytest runs it to the end
(exit 0 or 1); its passed / failed / error / skipped counts are printed beside it, with the
failed tests, and totalled, whatever they are; a file pytest cannot run (a collection error)
fails.

The lightning-habana commands are those its CI runs on Gaudi (`.azure/hpu-tests.yml`), one
entry per command or documented option. Scripts that download a dataset or a Hub model get a
synthetic one of the same format and shapes (MNIST, WikiText-2, an ImageNet folder of small
JPEGs, MRPC-like sentence pairs; tiny random GPT-2, LLaMA, BERT, ViT and DDPM models; the
accuracy metric `evaluate.load` would fetch, in ./accuracy, where it looks first), written
where the download would have put it or where the documented argument points (`DATA`), so
they run without the internet;
nothing else is changed. torchvision is PyPI's, served while emulating
(`hpusim.torchvision_ops`); the optimum-habana examples need the `[examples]` extra. Scripts
that need what cannot exist here are listed with the reason and not run (a compiled TPC kernel,
CIFAR-10's md5-checked download, a lightning-habana option that fails the same way on a
Gaudi). Where a script of this repository follows such a script step for step without what is
missing (`tools/equivalents/`: DeepSpeed's CIFAR-10 on random CIFAR-shaped data), it runs in
the public script's folder, named as such in the table. 78 entries over 52 distinct scripts and
test files: 74 run (49 distinct public files, the DeepSpeed equivalent not counted), 4 listed
with their reason. The 45 entries before the test files were added: all 42 runnable complete,
in 42 minutes on 2 shared cores (2026-11-29; the four 2-card hello_world mnist runs take 4-6
minutes each: that script starts 12 spawned DataLoader workers per loader and rank); the 33
added since (11 lightning-habana and 19 bridge test files, run_glue, run_image_classification)
were run alone (`--only`): all 32 runnable complete, in 7 minutes. The table of those runs is in
runtime/hpusim/README.md. Prints one line per script and the tally;
`--before REF` runs each script a second time on the emulator (hpusim and shim) of this
repository's commit REF, extracted with `git archive`: the baseline, measured in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hpusim.torchvision_ops import folder as torchvision_folder
from run_bridge_tests import REPO, emulator_env, extract_suite, with_emulator_of

HPUPROF = Path(sys.executable).parent / "hpuprof"
REPOS = {
    "model-references": "HabanaAI/Model-References",
    "lightning-habana": "Lightning-AI/lightning-Habana",
    "optimum-habana": "huggingface/optimum-habana",
    "gaudi-pytorch-bridge": "HabanaAI/gaudi-pytorch-bridge",
}
NEEDS_DOWNLOAD = "downloads {data}"


@dataclass(frozen=True)
class PublicScript:
    """One documented run of a public script (or one public test file) and what it needs."""

    name: str
    repo: str  # a key of REPOS
    path: str  # the script or test file, inside the repository
    args: tuple[str, ...] = ()
    kind: str = "script"  # "script": `hpuprof record --emulate`; "pytest": a test file, `args`
    # its pytest options
    cards: int = 1
    env: tuple[tuple[str, str], ...] = ()
    data: tuple[str, ...] = ()  # keys of DATA: synthetic stand-ins for downloads
    excluded: str = ""  # why it cannot run here; empty: it runs
    needs: tuple[str, ...] = ()  # modules of pyproject's `examples` (or `deepspeed`) extra
    equivalent: str = ""  # a script of this repository run in the public one's folder instead
    launched: bool = False  # started by a launcher (deepspeed, torchrun) even on one card
    extract: str = ""  # the folder to extract, when the script imports from above its own


def _extracted_folder(script: PublicScript) -> str:
    """The folder of the repository a run needs: the script's own, or the one it imports from."""
    return script.extract or str(Path(script.path).parent)


_LH = "lightning-habana"
_MR = "model-references"
_OH = "optimum-habana"
_MNIST_DEMO = (
    ("PL_USE_MOCKED_MNIST", "1"),
)  # lightning's own switch: its MNIST without torchvision
_TRAINING_RUN_TYPES = (
    "basic",
    "autocast",
    "HPUPrecisionPlugin",
    "MixedPrecisionPlugin",
    "recipe_caching",
    "fp8_training",
)
_HF_OFFLINE = (("HF_HUB_OFFLINE", "1"), ("HF_DATASETS_OFFLINE", "1"))
_GENERATION = (
    *("--model_name_or_path", "./tiny-gpt2", "--use_kv_cache", "--bf16"),
    *("--max_new_tokens", "20", "--batch_size", "1"),
)
_LLAMA_GENERATION = (
    *("--model_name_or_path", "./tiny-llama", "--use_kv_cache", "--bf16"),
    *("--max_new_tokens", "20", "--batch_size", "1"),
)
_LLAMA_FAST = ("--use_flash_attention", "--flash_attention_recompute", "--reuse_cache")
_LLAMA_FAST += ("--trim_logits",)
_CLM = (  # the README's command, on the staged model and text, 8 steps
    *("--model_name_or_path", "./tiny-gpt2", "--train_file", "./data/train.txt", "--do_train"),
    *("--per_device_train_batch_size", "4", "--block_size", "64", "--max_steps", "8"),
    *("--output_dir", "./out", "--overwrite_output_dir", "--report_to", "none"),
    *("--gaudi_config_name", "./gaudi_config.json", "--use_habana", "--use_lazy_mode"),
    *("--use_hpu_graphs_for_inference", "--throughput_warmup_steps", "3"),
)
_HELLO = "PyTorch/examples/computer_vision/hello_world"
_MLM = (  # the README's command (roberta-base), on the staged BERT and text, line by line
    *("--model_name_or_path", "./tiny-bert", "--train_file", "./data/train.txt", "--do_train"),
    *("--line_by_line", "--pad_to_max_length", "--max_seq_length", "64"),
    *("--per_device_train_batch_size", "4", "--max_steps", "8", "--bf16"),
    *("--output_dir", "./out", "--overwrite_output_dir", "--report_to", "none"),
    *("--gaudi_config_name", "./gaudi_config.json", "--use_habana", "--use_lazy_mode"),
    *("--use_hpu_graphs_for_inference", "--throughput_warmup_steps", "3"),
)
_FEATURE_EXTRACTION = (  # the README's command, its sentences, on the staged BERT (gte-small's kind)
    *("--model_name_or_path", "./tiny-bert", "--source_sentence", "w1 w2 w3 w4"),
    *("--input_texts", "w5 w6 w7", "w8 w9 w10 w11 w12", "w13 w14"),
    *("--use_hpu_graphs", "--sdp_on_bf16", "--bf16"),
)


_GLUE = (  # the README's single-card MRPC command, on the staged BERT and MRPC-like CSV files
    *("--model_name_or_path", "./tiny-bert", "--gaudi_config_name", "./gaudi_config.json"),
    *("--train_file", "./data/train.csv", "--validation_file", "./data/validation.csv"),
    *("--do_train", "--do_eval", "--per_device_train_batch_size", "8", "--max_steps", "8"),
    *("--learning_rate", "3e-5", "--max_seq_length", "64", "--output_dir", "./out"),
    *("--overwrite_output_dir", "--use_habana", "--use_lazy_mode", "--report_to", "none"),
    *("--use_hpu_graphs_for_inference", "--throughput_warmup_steps", "3", "--bf16"),
    "--sdp_on_bf16",
)
_IMAGE_CLASSIFICATION = (  # the README's ViT command, on the staged ViT and ImageNet folder
    *("--model_name_or_path", "./tiny-vit", "--train_dir", "./imagenet/train"),
    *("--validation_dir", "./imagenet/val", "--output_dir", "./out", "--overwrite_output_dir"),
    *("--remove_unused_columns", "False", "--do_train", "--do_eval", "--learning_rate", "3e-5"),
    *("--max_steps", "4", "--per_device_train_batch_size", "4", "--per_device_eval_batch_size"),
    *("4", "--seed", "1337", "--use_habana", "--use_lazy_mode", "--report_to", "none"),
    *("--use_hpu_graphs_for_inference", "--gaudi_config_name", "./gaudi_config.json"),
    *("--throughput_warmup_steps", "3", "--dataloader_num_workers", "1", "--bf16"),
)


def _mnist_example(name: str, path: str, args: tuple[str, ...]) -> PublicScript:
    """A lightning-habana example over lightning's demo MNIST (staged, without torchvision)."""
    return PublicScript(name, _LH, path, args, env=_MNIST_DEMO, data=("lightning-mnist",))


_LANGUAGE_MODEL_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD", "DDP")
"""The choices `language_model.py -s` documents (FSDP's sharding strategies, and DDP)."""


def _optimum_example(
    name: str,
    path: str,
    args: tuple[str, ...],
    needs: tuple[str, ...] = (),
    data: tuple[str, ...] = ("tiny-causal-lms",),
) -> PublicScript:
    """An optimum-habana example on staged tiny random models (GPT-2 / LLaMA, or BERT), with the
    Hub offline."""
    return PublicScript(name, _OH, path, args, env=_HF_OFFLINE, data=data, needs=needs)


def _language_model(strategy: str) -> PublicScript:
    """lightning-habana's Transformer on lightning's demo WikiText-2, on 2 cards, in eager mode
    (the script sets `PT_HPU_LAZY_MODE=0` after importing the bridge, too late for it: its CI
    sets it in the environment, and so does this run)."""
    path, args = "examples/pytorch/language_model.py", ("-d", "2", "-s", strategy)
    name = f"lh language_model {strategy}, 2 cards, eager"
    eager = (("PT_HPU_LAZY_MODE", "0"),)  # as lightning-habana's CI runs it
    return PublicScript(name, _LH, path, args, cards=2, env=eager, data=("wikitext-2",))


def _gpu_migration_mnist(lazy: str) -> PublicScript:
    """Model-References' CUDA MNIST run on the HPU by the GPU Migration Toolkit, as its README
    runs it (`PT_HPU_GPU_MIGRATION=1 $PYTHON main.py`, and with `PT_HPU_LAZY_MODE=1`: 14
    epochs), on a staged small MNIST; the toolkit's log level 1 (every migrated call logged)."""
    mode = "lazy" if lazy == "1" else "eager"
    migration = (("PT_HPU_GPU_MIGRATION", "1"), ("GPU_MIGRATION_LOG_LEVEL", "1"))
    return PublicScript(
        f"mr gpu_migration mnist ({mode})",
        _MR,
        "PyTorch/examples/gpu_migration/simple_examples/mnist/main.py",
        env=(*migration, ("PT_HPU_LAZY_MODE", lazy)),
        data=("torchvision-mnist",),
        needs=("torchvision",),
    )


_HELLO_MNIST_VARIANTS = ((), ("--autocast",), ("--use-torch-compile",))
_HELLO_MNIST_VARIANTS += (("--autocast", "--use-torch-compile"),)


def _hello_world_mnist(extra: tuple[str, ...], cards: int = 1) -> PublicScript:
    """Model-References' hello_world `mnist.py` as its README runs it
    (`PT_HPU_LAZY_MODE=0 $PYTHON mnist.py --batch-size=64 --epochs=1 --lr=1.0 --gamma=0.7 --hpu`,
    with `--autocast` and / or `--use-torch-compile`; on 8 cards with `mpirun -n 8`, here
    `--cards 2`, whose RANK / WORLD_SIZE its `init_distributed_mode` reads as torchrun's), on a
    staged small MNIST where its default `--data-path ../data` looks."""
    where = f", {cards} cards (README: mpirun -n 8)" if cards > 1 else ""
    return PublicScript(
        f"mr hello_world mnist {' '.join(extra) or '(eager)'}{where}",
        _MR,
        f"{_HELLO}/mnist.py",
        ("--batch-size=64", "--epochs=1", "--lr=1.0", "--gamma=0.7", "--hpu", *extra),
        cards=cards,
        env=(("PT_HPU_LAZY_MODE", "0"),),
        data=("torchvision-mnist-above",),
        needs=("torchvision",),
    )


_DS_CIFAR = "PyTorch/examples/DeepSpeed/cifar_example/cifar10_deepspeed.py"


def _deepspeed_cifar10(cards: int, compiled: bool) -> PublicScript:
    """Model-References' DeepSpeed CIFAR-10 example as its README runs it (`PT_HPU_LAZY_MODE=0
    deepspeed --num_gpus=N cifar10_deepspeed.py --deepspeed --deepspeed_config ds_config.json`,
    its ds_config.json: ZeRO-1, bf16), by `tools/equivalents/cifar10_deepspeed.py`, which follows
    it step for step without torchvision on random CIFAR-shaped data (512 images, 1 epoch);
    `compiled`: with the example's `torch.compile(net, backend="hpu_backend")`."""
    args = ("--deepspeed", "--deepspeed_config", "ds_config.json", "--log-interval", "8")
    how = "torch.compile" if compiled else "eager module (--no-compile)"
    return PublicScript(
        f"mr DeepSpeed cifar10 equivalent, {cards} card{'s' * (cards > 1)}, {how}",
        _MR,
        _DS_CIFAR,
        args if compiled else (*args, "--no-compile"),
        cards=cards,
        env=(("PT_HPU_LAZY_MODE", "0"),),
        needs=("deepspeed",),
        equivalent="tools/equivalents/cifar10_deepspeed.py",
        launched=True,
    )


_CLASSIFICATION = "PyTorch/computer_vision/classification/torchvision/train.py"
_CLASSIFICATION_ARGS = (
    *("--data-path=./imagenet", "--model=resnet18", "--device=hpu", "--batch-size=4"),
    *("--epochs=1", "--workers=0", "--print-freq=1", "--output-dir=.", "--seed=123"),
    *("--dl-time-exclude=False", "--dl-worker-type=HABANA"),
)
_EAGER = "--run-lazy-mode=False"  # the README passes it in eager mode (deprecated, no effect)
_CLASSIFICATION_RUNS: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    ("lazy, HPU graphs", "1", (), 1),
    ("eager, torch.compile, autocast", "0", ("--autocast", _EAGER, "--use_torch_compile"), 1),
    (  # the README's 8-card eager command: FusedLars over FusedResourceApplyMomentum, DDP
        "eager, autocast, LARS, 2 cards (README: mpirun -n 8)",
        "0",
        (
            "--autocast",
            "--optimizer=lars",
            "-eoe",
            "3",
            "-ebe",
            "4",
            "--label-smoothing=0.1",
            _EAGER,
        ),
        2,
    ),
)


def _torchvision_classification(
    how: str, lazy: str, extra: tuple[str, ...], cards: int
) -> PublicScript:
    """Model-References' ImageNet classification `train.py` as its README runs ResNet50 (here
    its default model, resnet18, which its help lists first; 1 epoch of batch 4, no workers) on a
    staged small ImageNet folder: `habana_dataloader` (`--dl-worker-type=HABANA`) falls back to
    torch's DataLoader without a media pipe, as on a Gaudi without one; lazy mode wraps the
    model in its ModuleCacher (`--hpu_graphs` defaults to True), eager mode compiles it or
    (on 2 cards, its `init_distributed_mode` reading torchrun's variables) trains with LARS."""
    return PublicScript(
        f"mr torchvision classification resnet18 ({how})",
        _MR,
        _CLASSIFICATION,
        (*_CLASSIFICATION_ARGS, *extra),
        cards=cards,
        env=(("PT_HPU_LAZY_MODE", lazy),),
        data=("imagenet-folder",),
        needs=("torchvision",),
    )


_MIGRATED_CLASSIFICATION = (
    "PyTorch/examples/gpu_migration/computer_vision/classification/torchvision/train.py"
)


def _gpu_migration_classification() -> PublicScript:
    """Model-References' GPU-migration copy of torchvision's classification reference, CUDA code
    run on the HPU by the GPU Migration Toolkit as its README runs it
    (`PT_HPU_GPU_MIGRATION=1 PT_HPU_CONVERT_FP16_TO_BF16_FOR_MIGRATION=1 PT_HPU_LAZY_MODE=0
    train.py --device=cuda --opt=sgd --amp --use-torch-compile`), resnet18 (its default), 1
    epoch of batch 4, on the staged small ImageNet folder."""
    env = (("PT_HPU_GPU_MIGRATION", "1"), ("PT_HPU_CONVERT_FP16_TO_BF16_FOR_MIGRATION", "1"))
    args = ("--batch-size=4", "--model=resnet18", "--device=cuda", "--data-path=./imagenet")
    args += ("--workers=0", "--epochs=1", "--opt=sgd", "--amp", "--use-torch-compile")
    return PublicScript(
        "mr gpu_migration torchvision classification resnet18 (eager, amp, torch.compile)",
        _MR,
        _MIGRATED_CLASSIFICATION,
        args,
        env=(*env, ("GPU_MIGRATION_LOG_LEVEL", "1"), ("PT_HPU_LAZY_MODE", "0")),
        data=("imagenet-folder",),
        needs=("torchvision",),
    )


_LH_TEST_FILES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # (file, its options, PT_HPU_LAZY_MODE) as lightning-habana's CI (.azure/hpu-tests.yml) runs
    # each: "HPU General tests" (fabric, then pytorch with `-m "not standalone_only"`), and the
    # torch.compile and FSDP steps in eager mode
    ("test_fabric/test_accelerator.py", ("--hpus", "1"), ""),
    ("test_fabric/test_strategy.py", ("--hpus", "1"), ""),
    ("test_fabric/test_precision.py", ("--hpus", "1"), ""),
    *(
        (f"test_pytorch/{name}.py", ("--hpus", "1", "-m", "not standalone_only"), "")
        for name in ("test_accelerator", "test_hpu_graphs", "test_dynamic_shapes")
    ),
    *(
        (f"test_pytorch/{name}.py", ("--hpus", "1", "-m", "not standalone_only"), "")
        for name in ("test_datamodule", "test_profiler", "test_precision")
    ),
    ("test_pytorch/test_compile.py", ("--hpus", "1"), "0"),
    ("test_pytorch/test_fsdp.py", ("--hpus", "1"), "0"),
)


def _lightning_test_file(path: str, options: tuple[str, ...], lazy: str) -> PublicScript:
    """One of lightning-habana's (1.6.0) test files, as its CI runs it: pytest from the
    repository's top with its `tests/conftest.py` (`--hpus`), lightning's demo MNIST staged in
    ./data as torchvision downloads it (`tools/run_lightning_habana_tests.py` does the same)."""
    mode = (("PT_HPU_LAZY_MODE", lazy),) if lazy else ()
    name = f"lh tests/{path}" + (" (eager)" if lazy == "0" else "")
    data = ("torchvision-mnist-suite",)
    return PublicScript(
        name, _LH, f"tests/{path}", options, "pytest", env=mode, data=data, extract="tests"
    )


_BR = "gaudi-pytorch-bridge"
_BRIDGE_SUITE = "tests/pytest_working"
_BRIDGE_FILES: tuple[tuple[str, str], ...] = (
    # what Gaudi users reach for: metrics, HPU graphs, streams, dynamic shapes, autocast, the
    # fused optimizers, SDPA, EMA, the random generator, serialization, hooks, torch.compile
    # (files whose every test the bridge marks skip, lazy/test_capture_replay.py,
    # test_memory_pool.py and fused_ops/lars/test_fused_lars.py, are left out: they test nothing)
    ("test_metrics.py", "lazy"),
    ("lazy/test_hpu_graph.py", "lazy"),
    ("lazy/test_hpu_record_stream.py", "lazy"),
    ("lazy/test_dynamic_shapes_detector.py", "lazy"),
    ("any_mode/test_hpu_autocast.py", "lazy"),
    ("any_mode/test_fused_adamw.py", "lazy"),
    ("any_mode/FusedSDPA/test_hpu_sdpa.py", "lazy"),
    ("lazy/fused_ops/test_adamw.py", "lazy"),
    ("lazy/fused_ops/test_norm.py", "lazy"),
    ("any_mode/test_ema.py", "lazy"),
    ("test_habanaframework_api.py", "lazy"),
    ("lazy/test_hpu_random_gen.py", "lazy"),
    ("lazy/test_hpu_serialization.py", "lazy"),
    ("lazy/test_hpu_hooks.py", "lazy"),
    ("any_mode/test_hpu_multiple_sdpa_impls.py", "lazy"),
    ("lazy/fused_ops/test_lamb.py", "lazy"),
    ("compile/test_hpu_simple_graphs.py", "compile"),
    ("compile/test_compile_graph_breaks.py", "compile"),
)


def _bridge_test_file(path: str, mode: str) -> PublicScript:
    """One of the bridge's own (1.19) test files, as its suite runs: pytest over the extracted
    `tests/pytest_working` with the bridge's conftest, `--mode lazy` (its conftest sets
    `PT_HPU_LAZY_MODE=1` and `PT_HPU_PLACE_ON_CPU=none`; `lazy/`, `any_mode/` and the top
    folder's files) or `--mode compile` (`compile/`), as `tools/run_bridge_tests.py` runs them."""
    name = f"br {path}" + (f" (--mode {mode})" if mode != "lazy" else "")
    suite_path = f"{_BRIDGE_SUITE}/{path}"
    return PublicScript(name, _BR, suite_path, ("--mode", mode), "pytest", extract=_BRIDGE_SUITE)


SCRIPTS: tuple[PublicScript, ...] = (
    _mnist_example(
        "lh hpu_graphs train",
        "examples/pytorch/hpu_graphs.py",
        ("train", "--mode", "capture_and_replay", "make_graphed_callables", "modulecacher"),
    ),
    _mnist_example(
        "lh hpu_graphs inference",
        "examples/pytorch/hpu_graphs.py",
        ("inference", "--mode", "capture_and_replay", "wrap_in_hpu_graph"),
    ),
    _mnist_example(
        "lh hpu_graphs dynamicity: dynamic control flow",
        "examples/pytorch/hpu_graphs.py",
        ("dynamicity", "--mode", "dynamic_control_flow"),
    ),
    _mnist_example(
        "lh hpu_graphs dynamicity: dynamic ops",
        "examples/pytorch/hpu_graphs.py",
        ("dynamicity", "--mode", "dynamic_ops"),
    ),
    _mnist_example(
        "lh mnist_trainer, run types but fp8 inference",
        "examples/pytorch/mnist_trainer.py",
        ("-r", *_TRAINING_RUN_TYPES),
    ),
    PublicScript(
        "lh mnist_trainer, fp8 inference",
        _LH,
        "examples/pytorch/mnist_trainer.py",
        ("-r", "fp8_inference"),
        excluded="lightning-habana 1.6.0 names its default HQT configs "
        "str(importlib.resources.path(...)), on Python 3.9 and later the repr of a context "
        "manager, so without QUANT_CONFIG set it stops at FileNotFoundError "
        "'<contextlib._GeneratorContextManager ...>' before any device work, on any machine; "
        "HQT itself runs under emulation (tests/runtime/test_clients.py)",
    ),
    _mnist_example(
        "lh mnist_trainer, multi-tenancy (2 tenants x 2 cards)",
        "examples/pytorch/mnist_trainer.py",
        ("-r", "multi_tenancy"),
    ),
    *(_language_model(strategy) for strategy in _LANGUAGE_MODEL_STRATEGIES),
    PublicScript(
        "lh fabric image_classifier",
        _LH,
        "examples/fabric/image_classifier/train_fabric.py",
        ("--dry-run",),
        data=("torchvision-mnist-datasets",),
        needs=("torchvision",),
    ),
    _optimum_example(
        "oh run_clm: train a GPT-2 (lazy, fused AdamW, HPU graphs for inference)",
        "examples/language-modeling/run_clm.py",
        _CLM,
        needs=("datasets", "evaluate"),
    ),
    _optimum_example(
        "oh run_generation: bf16, KV cache",
        "examples/text-generation/run_generation.py",
        _GENERATION,
    ),
    _optimum_example(
        "oh run_generation: bf16, KV cache, HPU graphs",
        "examples/text-generation/run_generation.py",
        (*_GENERATION, "--use_hpu_graphs"),
    ),
    _optimum_example(
        "oh run_generation: LLaMA, bf16, KV cache, HPU graphs",
        "examples/text-generation/run_generation.py",
        (*_LLAMA_GENERATION, "--use_hpu_graphs"),
    ),
    _optimum_example(
        "oh run_generation: LLaMA, bf16, HPU graphs, FusedSDPA, reuse cache, trim logits",
        "examples/text-generation/run_generation.py",
        (*_LLAMA_GENERATION, "--use_hpu_graphs", *_LLAMA_FAST),
    ),
    _optimum_example(
        "oh run_mlm: train a BERT line by line (lazy, bf16, padded to max length)",
        "examples/language-modeling/run_mlm.py",
        _MLM,
        needs=("datasets", "evaluate"),
        data=("tiny-bert",),
    ),
    _optimum_example(
        "oh run_feature_extraction: BERT embeddings (bf16, HPU graphs)",
        "examples/text-feature-extraction/run_feature_extraction.py",
        _FEATURE_EXTRACTION,
        data=("tiny-bert",),
    ),
    _optimum_example(
        "oh run_glue: fine-tune a BERT classifier on MRPC-like CSV files (lazy, bf16)",
        "examples/text-classification/run_glue.py",
        _GLUE,
        needs=("datasets", "evaluate"),
        data=("tiny-bert", "sentence-pairs", "accuracy-metric"),
    ),
    _optimum_example(
        "oh run_image_classification: fine-tune a ViT on an image folder (lazy, bf16)",
        "examples/image-classification/run_image_classification.py",
        _IMAGE_CLASSIFICATION,
        needs=("datasets", "evaluate", "torchvision"),
        data=("tiny-vit", "imagenet-folder", "accuracy-metric"),
    ),
    PublicScript(
        "oh run_pipeline: LLaMA text-generation pipeline (sampling, KV cache, HPU graphs)",
        _OH,
        "examples/text-generation/text-generation-pipeline/run_pipeline.py",
        (  # the README's first command, on the staged LLaMA, 20 new tokens
            *("--model_name_or_path", "./tiny-llama", "--use_hpu_graphs", "--use_kv_cache"),
            *("--max_new_tokens", "20", "--do_sample", "--prompt", "Here is my prompt"),
        ),
        env=_HF_OFFLINE,
        data=("tiny-causal-lms",),
        extract="examples/text-generation",  # it imports run_generation and utils from there
    ),
    PublicScript(  # the README's command until 1.19 (google/ddpm-ema-celebahq-256, batch 16)
        "oh unconditional_image_generation: DDPM, Gaudi DDIM scheduler, HPU graphs, bf16",
        _OH,
        "examples/stable-diffusion/unconditional_image_generation.py",
        (
            *("--model_name_or_path", "./tiny-ddpm", "--batch_size", "2"),
            *("--num_inference_steps", "10", "--use_habana", "--use_gaudi_ddim_scheduler"),
            *("--use_hpu_graphs", "--sdp_on_bf16", "--bf16", "--save_outputs"),
            *("--output_dir", "./"),
        ),
        env=_HF_OFFLINE,
        data=("tiny-ddpm",),
    ),
    PublicScript(
        "oh test_habana_profiler_unit",
        _OH,
        "tests/test_habana_profiler_unit.py",
        kind="pytest",
    ),
    PublicScript(
        "oh test_gaudi_configuration",
        _OH,
        "tests/test_gaudi_configuration.py",
        kind="pytest",
    ),
    PublicScript(
        "mr hello_world example (lazy)",
        _MR,
        f"{_HELLO}/example.py",
        env=(("PT_HPU_LAZY_MODE", "1"),),
        data=("torchvision-mnist", "checkpoints-folder"),
        needs=("torchvision",),
    ),
    *(_hello_world_mnist(extra, cards) for cards in (1, 2) for extra in _HELLO_MNIST_VARIANTS),
    *(_gpu_migration_mnist(mode) for mode in ("0", "1")),
    PublicScript(
        "mr DeepSpeed cifar10",
        _MR,
        _DS_CIFAR,
        excluded=NEEDS_DOWNLOAD.format(
            data="CIFAR-10 (torchvision checks its md5s before it "
            "skips the download: a staged stand-in is downloaded over); DeepSpeed from PyPI runs "
            "it otherwise: see the equivalent below"
        ),
    ),
    *(_deepspeed_cifar10(cards, compiled) for cards in (1, 2) for compiled in (True, False)),
    PublicScript(
        "mr custom_op pt2 API",
        _MR,
        "PyTorch/examples/custom_op/pt2_custom_op_API/hpu_custom_op_topk_test.py",
        excluded="a TPC kernel built against Synapse's headers and libraries (a Gaudi SDK build)",
    ),
    *(_torchvision_classification(*run) for run in _CLASSIFICATION_RUNS),
    _gpu_migration_classification(),
    *(_lightning_test_file(*entry) for entry in _LH_TEST_FILES),
    PublicScript(
        "lh tests/test_fabric/test_fsdp.py (eager)",
        _LH,
        "tests/test_fabric/test_fsdp.py",
        excluded="imports `_TORCH_GREATER_EQUAL_2_1` from lightning.fabric.utilities.imports, "
        "which lightning 2.4.0 (pyproject's `lightning` extra, the release lightning-habana "
        "1.6.0 imports with) no longer has: pytest stops at collection with ImportError before "
        "any device work, on any machine with that lightning",
    ),
    *(_bridge_test_file(path, mode) for path, mode in _BRIDGE_FILES),
    PublicScript(
        "br test_hpu_stream.py",
        _BR,
        f"{_BRIDGE_SUITE}/test_hpu_stream.py",
        ("--mode", "lazy"),
        "pytest",
        needs=("expecttest",),  # PyTorch's test helper, which the file imports
        extract=_BRIDGE_SUITE,
    ),
)


def _lightning_mnist(root: Path) -> None:
    """lightning's demo MNIST (`lightning.pytorch.demos.mnist_datamodule._MNIST`): the two files
    it would download into ./data/MNIST/complete, (images [N, 28, 28], int64 labels [N]) with
    MNIST's sizes and sparsity (about 19% of the pixels lit); random pixels and labels.

    The pixels are stored as floats in [0, 1]: lightning-habana's CI runs these examples with
    torchvision installed, where the datamodule's `ToTensor()` scales the uint8 pixels to [0, 1]
    before `Normalize`; without torchvision (here) the demo dataset skips that transform, and raw
    0..255 pixels saturate `log_softmax` to exact zeros that `hpu_graphs.py`'s dynamic-ops step
    filters out (`tmp[tmp < 0]` would then not reshape to its batch)."""
    import torch

    folder = root / "data" / "MNIST" / "complete"
    folder.mkdir(parents=True, exist_ok=True)
    generator = torch.Generator().manual_seed(0)
    for name, count in (("training.pt", 60_000), ("test.pt", 10_000)):
        pixels = torch.randint(0, 256, (count, 28, 28), dtype=torch.uint8, generator=generator)
        lit = torch.rand((count, 28, 28), generator=generator) < 0.19
        labels = torch.randint(0, 10, (count,), generator=generator)
        torch.save(((pixels * lit).float() / 255, labels), folder / name)


def _wikitext2(root: Path) -> None:
    """lightning's demo WikiText-2 (`lightning.pytorch.demos.WikiText2`): ./data/wikitext-2.txt,
    lines of words drawn from a vocabulary of 1,000 (the real file: 36,718 lines, 33,278 words)."""
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(1_000)]
    lines = (" ".join(rng.choices(vocabulary, k=rng.randint(5, 40))) for _ in range(4_000))
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "wikitext-2.txt").write_text("\n".join(lines) + "\n", encoding="utf8")


def _tiny_causal_lms(root: Path) -> None:
    """What optimum-habana's examples would download from the Hub, small and random:
    - ./tiny-gpt2: GPT-2 of 2 layers x 64 (GPT-2's vocabulary size and context: the examples pad
      with its eos id 50256) with a byte-level BPE tokenizer trained on `_hub_text`'s lines;
    - ./tiny-llama: LLaMA of 2 layers x 64, 4 heads over 2 KV heads (grouped-query attention,
      RMSNorm, rotary embeddings: the fused kernels optimum-habana uses on Gaudi), same tokenizer;
    - `_hub_text`'s ./data/train.txt and ./gaudi_config.json."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        GPT2TokenizerFast,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    lines = _hub_text(root)
    gpt2, llama = root / "tiny-gpt2", root / "tiny-llama"
    gpt2.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(lines, vocab_size=600, special_tokens=["<|endoftext|>"])
    bpe.save_model(str(gpt2))
    files = {"vocab_file": str(gpt2 / "vocab.json"), "merges_file": str(gpt2 / "merges.txt")}
    GPT2TokenizerFast(**files).save_pretrained(gpt2)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=64, n_layer=2, n_head=2)
    GPT2LMHeadModel(config).save_pretrained(gpt2)
    special = "<|endoftext|>"
    PreTrainedTokenizerFast(
        tokenizer_file=str(gpt2 / "tokenizer.json"),
        bos_token=special,
        eos_token=special,
        unk_token=special,
        model_input_names=["input_ids", "attention_mask"],
    ).save_pretrained(llama)
    shape = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
    heads = {"num_attention_heads": 4, "num_key_value_heads": 2}
    config = LlamaConfig(vocab_size=32000, bos_token_id=0, eos_token_id=0, **shape, **heads)
    LlamaForCausalLM(config).save_pretrained(llama)


_WORDS = [f"w{i}" for i in range(500)]
"""The vocabulary of the staged text: the tiny models' tokenizers are built on it."""


def _hub_text(root: Path) -> list[str]:
    """What the optimum-habana examples' staged models share: ./data/train.txt (2,000 lines of
    words drawn from `_WORDS`, returned) and ./gaudi_config.json (fused AdamW and clip norm,
    torch autocast: as the Hub's Habana/gpt2 and Habana/bert-base-uncased)."""
    rng = random.Random(0)
    lines = [" ".join(rng.choices(_WORDS, k=rng.randint(5, 40))) for _ in range(2_000)]
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    gaudi = {"use_fused_adam": True, "use_fused_clip_norm": True, "use_torch_autocast": True}
    (root / "gaudi_config.json").write_text(json.dumps(gaudi))
    return lines


def _tiny_bert(root: Path) -> None:
    """A BERT encoder as the Hub's bert-base-uncased / gte-small would give it, small and
    random: ./tiny-bert, 2 layers x 64, 4 heads, with its masked-LM head (`AutoModel` loads the
    encoder alone) and a WordPiece tokenizer whose vocabulary is BERT's special tokens and
    `_WORDS`; plus `_hub_text`."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    _hub_text(root)
    bert = root / "tiny-bert"
    bert.mkdir()
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_WORDS]
    (bert / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf8")
    BertTokenizerFast(vocab_file=str(bert / "vocab.txt")).save_pretrained(bert)
    torch.manual_seed(0)
    shape = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
    config = BertConfig(vocab_size=len(vocabulary), num_attention_heads=4, **shape)
    BertForMaskedLM(config).save_pretrained(bert)


def _tiny_vit(root: Path) -> None:
    """What `google/vit-base-patch16-224-in21k` would download, small and random: ./tiny-vit, a
    ViT of 2 layers x 64 over 16 x 16 patches of 224 x 224 images with its image processor
    (resize to 224, ImageNet's 0.5 mean and std, as that repository's); plus `_hub_text`'s
    gaudi_config.json."""
    import torch
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    _hub_text(root)
    vit = root / "tiny-vit"
    torch.manual_seed(0)
    shape = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
    ViTModel(ViTConfig(num_attention_heads=4, **shape), add_pooling_layer=False).save_pretrained(
        vit
    )
    ViTImageProcessor(size={"height": 224, "width": 224}).save_pretrained(vit)


def _sentence_pairs(root: Path) -> None:
    """MRPC's columns (sentence1, sentence2, label 0 / 1) in ./data/train.csv (256 rows) and
    ./data/validation.csv (64), as `run_glue --train_file / --validation_file` read them;
    sentences of the staged words."""
    import csv

    rng = random.Random(0)
    (root / "data").mkdir(parents=True, exist_ok=True)
    for split, rows in (("train", 256), ("validation", 64)):
        with (root / "data" / f"{split}.csv").open("w", newline="", encoding="utf8") as out:
            writer = csv.writer(out)
            writer.writerow(["sentence1", "sentence2", "label"])
            for _ in range(rows):
                pair = (" ".join(rng.choices(_WORDS, k=rng.randint(5, 20))) for _ in range(2))
                writer.writerow([*pair, rng.randint(0, 1)])


_ACCURACY_METRIC = '''"""Accuracy: the fraction of predictions equal to their references (a stand-in, written for
runs without the internet, for the Hub's evaluate-metric/accuracy that `evaluate.load("accuracy")`
would download; evaluate loads ./accuracy/accuracy.py from the working directory first)."""

import datasets
import evaluate


class Accuracy(evaluate.Metric):
    def _info(self):
        ids = datasets.Value("int32")
        return evaluate.MetricInfo(
            description="fraction of predictions equal to their references",
            citation="",
            inputs_description="predictions and references: class ids",
            features=datasets.Features({"predictions": ids, "references": ids}),
        )

    def _compute(self, predictions, references, normalize=True, sample_weight=None):
        weights = sample_weight if sample_weight is not None else [1.0] * len(predictions)
        hits = sum(w for p, r, w in zip(predictions, references, weights) if p == r)
        return {"accuracy": float(hits / sum(weights) if normalize else hits)}
'''


def _accuracy_metric(root: Path) -> None:
    """./accuracy/accuracy.py: `_ACCURACY_METRIC`, where `evaluate.load("accuracy")` finds it."""
    (root / "accuracy").mkdir(exist_ok=True)
    (root / "accuracy" / "accuracy.py").write_text(_ACCURACY_METRIC, encoding="utf8")


def _tiny_ddpm(root: Path) -> None:
    """What `DDPMPipeline.from_pretrained("google/ddpm-ema-celebahq-256")` would download, small
    and random: ./tiny-ddpm with a UNet2DModel of 32 x 32 RGB samples (two resolutions of 32 and
    64 channels, attention at the lower), DDPM's 1,000-step scheduler in scheduler/ and, as in
    that Hub repository, its scheduler config at the top (where the example loads it from)."""
    import torch
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(
        sample_size=32,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
    )
    scheduler = DDPMScheduler(num_train_timesteps=1000)
    DDPMPipeline(unet=unet, scheduler=scheduler).save_pretrained(root / "tiny-ddpm")
    scheduler.save_config(root / "tiny-ddpm")


def _idx_file(path: Path, kind: int, data: bytes, *dims: int) -> None:
    """An MNIST file in its IDX format: magic (0x08 = uint8, `kind` = number of dimensions),
    the dimensions as big-endian int32, then the bytes."""
    head = (0x0800 + kind).to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims)
    path.write_bytes(head + data)


def torchvision_mnist_files(datasets: Path, train: int = 256, test: int = 256) -> None:
    """What `torchvision.datasets.MNIST(datasets, download=True)` would download, unpacked into
    `datasets`/MNIST/raw (it then skips the download): `train` training and `test` test images
    of 28 x 28 uint8 pixels, about 19% lit (MNIST's sparsity), with labels 0-9; random."""
    import numpy as np

    rng = np.random.default_rng(0)
    raw = datasets / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, count in (("train", train), ("t10k", test)):
        lit = rng.random(count * 784) < 0.19
        pixels = np.where(lit, rng.integers(1, 256, count * 784), 0).astype(np.uint8)
        labels = rng.integers(0, 10, count).astype(np.uint8)
        _idx_file(raw / f"{prefix}-images-idx3-ubyte", 3, pixels.tobytes(), count, 28, 28)
        _idx_file(raw / f"{prefix}-labels-idx1-ubyte", 1, labels.tobytes(), count)


def _image_folder(root: Path, classes: int = 8, train: int = 2, val: int = 1) -> None:
    """ImageNet's layout as `torchvision.datasets.ImageFolder` reads it (the one Model-References'
    classification scripts take as `--data-path`): `root`/train/<wnid>/<name>.JPEG and
    `root`/val/<wnid>/..., `classes` folders named like ImageNet's WordNet ids, `train` and `val`
    RGB JPEGs each of 64 x 48 pixels (the scripts' crops upscale them to 224); random pixels."""
    from PIL import Image

    rng = random.Random(0)
    for split, count in (("train", train), ("val", val)):
        for label in range(classes):
            wnid = f"n{1_440_764 + label:08d}"
            folder = root / split / wnid
            folder.mkdir(parents=True, exist_ok=True)
            for index in range(count):
                pixels = rng.randbytes(64 * 48 * 3)
                image = Image.frombytes("RGB", (64, 48), pixels)
                image.save(folder / f"{wnid}_{index}.JPEG", quality=90)


DATA: dict[str, Callable[[Path], None]] = {
    "imagenet-folder": lambda root: _image_folder(root / "imagenet"),  # --data-path=./imagenet
    "torchvision-mnist": lambda root: torchvision_mnist_files(root / "data"),  # ./data
    "torchvision-mnist-above": lambda root: torchvision_mnist_files(
        root.parent / "data"
    ),  # ../data
    # lightning-habana's fabric example: <repository>/Datasets
    "torchvision-mnist-datasets": lambda root: torchvision_mnist_files(
        root.parents[2] / "Datasets"
    ),
    # example.py saves each epoch into ./checkpoints, which it does not create (nor does the
    # repository hold it): on a Gaudi too it stops at "Parent directory ./checkpoints does not
    # exist" until the user makes the folder
    # lightning-habana's tests, run from the repository's top: its demo MNIST in ./data, at
    # MNIST's sizes (the datamodule holds 5,000 training images out for validation)
    "torchvision-mnist-suite": lambda root: torchvision_mnist_files(
        root.parents[1] / "data", train=60_000, test=10_000
    ),
    "checkpoints-folder": lambda root: (root / "checkpoints").mkdir(exist_ok=True),
    "lightning-mnist": _lightning_mnist,
    "wikitext-2": _wikitext2,
    "tiny-causal-lms": _tiny_causal_lms,
    "tiny-bert": _tiny_bert,
    "tiny-ddpm": _tiny_ddpm,
    "tiny-vit": _tiny_vit,
    "sentence-pairs": _sentence_pairs,
    "accuracy-metric": _accuracy_metric,
}


@dataclass(frozen=True)
class Outcome:
    name: str
    status: str  # completed | failed | timeout | excluded
    seconds: float = 0.0
    detail: str = ""
    counts: dict[str, int] = field(default_factory=dict)  # a test file's pytest tally


_EXCEPTION_LINE = re.compile(r"^\w+(?:\.\w+)*(?:Error|Exception|Interrupt)\b.*$", re.M)
_PYTEST_TALLY = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_TALLY_LINE = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b.* in [\d.]+s"
)
_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) .*$", re.M)


def why_failed(output: str) -> str:
    """The last exception line of a failed run's output (else its last line), shortened."""
    lines = _EXCEPTION_LINE.findall(output) or output.strip().splitlines()[-1:] or [""]
    return lines[-1][:300]


def pytest_counts(output: str) -> dict[str, int]:
    """pytest's closing tally (`3 failed, 6 passed, 2 errors, 1 warning in 7.52s`, its last line
    of that form: a test's own output may hold such words) as counts."""
    tally = next((line for line in reversed(output.splitlines()) if _TALLY_LINE.search(line)), "")
    return {
        kind.removesuffix("s") if kind.startswith("error") else kind: int(n)
        for n, kind in _PYTEST_TALLY.findall(tally)
    }


PYTEST_RAN = (0, 1)
"""pytest's exit codes for a session that ran its tests to the end: all passed, some failed
(2: interrupted, 3: internal error, 4: usage error, 5: no test collected)."""


def pytest_outcome(name: str, returncode: int, output: str, seconds: float) -> Outcome:
    """A test file's outcome: "completed" when pytest ran it to the end (exit 0 or 1), its
    tally in the counts whatever they are, the last failure's exception line as the detail;
    "failed" when pytest could not run it (collection error, crash, no tests)."""
    ran = returncode in PYTEST_RAN
    failures = _PYTEST_SUMMARY.findall(output)  # `-rfE`: one line per failed test
    detail = "" if returncode == 0 else "; ".join(failures)[:600] or why_failed(output)
    status = "completed" if ran else "failed"
    return Outcome(name, status, seconds, detail, pytest_counts(output))


def _command(script: PublicScript, run_dir: Path) -> list[str]:
    if script.kind == "pytest":
        pytest = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]
        pytest += ["-o", "addopts="]
        return [*pytest, script.path, *script.args]
    launcher = script.cards > 1 or script.launched  # `--cards N`: the launcher's variables
    cards = ["--cards", str(script.cards)] if launcher else []
    record = [str(HPUPROF), "record", "--emulate", *cards, "-o", str(run_dir), "--"]
    name = Path(script.equivalent or script.path).name
    return [*record, "python", name, *script.args]


def _run_status(run_dir: Path) -> str:
    manifest = run_dir / "run.json"
    if not manifest.is_file():
        return "no run.json"
    return str(json.loads(manifest.read_text()).get("end_state", "?"))


_INSTALL = {
    "deepspeed": "pip install -e '.[deepspeed]'",
    "examples": "pip install -e '.[examples]'",
    "torchvision": "make test's set-up (.venv/hpusim-torchvision: runtime/hpusim/torchvision_ops.py)",
}


def _installed(module: str) -> bool:
    """Whether the emulated run can import `module`: installed, or (torchvision) set aside in
    the folder hpusim serves it from while emulating."""
    if module == "torchvision" and torchvision_folder().is_dir():
        return True
    return importlib.util.find_spec(module) is not None


def run_one(
    script: PublicScript, checkout: Path, ref: str, timeout: int, emulator: Path | None = None
) -> Outcome:
    """Extract the script's folder, stage its data, run it; what happened. `emulator`: a folder
    holding another commit's `runtime/` (`--before`), whose hpusim and shim then run it."""
    if script.excluded:
        return Outcome(script.name, "excluded", detail=script.excluded)
    missing = [m for m in script.needs if not _installed(m)]
    if missing:
        why = f"needs {', '.join(missing)}: {_INSTALL.get(missing[0], _INSTALL['examples'])}"
        return Outcome(script.name, "not installed", detail=why)
    with tempfile.TemporaryDirectory(prefix="public-script-") as tmp_name:
        tmp = Path(tmp_name)
        extract_suite(checkout, tmp, _extracted_folder(script), ref)
        folder = tmp / Path(script.path).parent
        for key in script.data:
            DATA[key](folder)
        if script.equivalent:
            shutil.copy(REPO / script.equivalent, folder / Path(script.equivalent).name)
        env = emulator_env(tmp)
        env.update(script.env)
        if emulator is not None:
            env = with_emulator_of(emulator, env)
        run_dir = tmp / "run"
        started = time.monotonic()
        try:
            done = subprocess.run(
                _command(script, run_dir),
                cwd=tmp if script.kind == "pytest" else folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Outcome(script.name, "timeout", time.monotonic() - started, f"over {timeout} s")
        seconds = time.monotonic() - started
        output = done.stdout + done.stderr
        if script.kind == "pytest":
            return pytest_outcome(script.name, done.returncode, output, seconds)
        recorded = _run_status(run_dir)
        if done.returncode == 0 and recorded == "completed":
            return Outcome(script.name, "completed", seconds, "run.json: completed")
        detail = f"exit {done.returncode}, run.json end_state {recorded}; {why_failed(output)}"
        return Outcome(script.name, "failed", seconds, detail)


def _tally(outcomes: list[Outcome]) -> tuple[int, int]:
    ran = [o for o in outcomes if o.status not in ("excluded", "not installed")]
    return sum(o.status == "completed" for o in ran), len(ran)


def _report(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        counts = ", ".join(f"{n} {k}" for k, n in outcome.counts.items())
        extra = f" [{counts}]" if counts else ""
        print(f"{outcome.status:9} {outcome.seconds:6.1f}s  {outcome.name}{extra}")
        if outcome.detail and (outcome.status != "completed" or outcome.counts):
            print(f"{'':18}{outcome.detail}")
    completed, ran = _tally(outcomes)
    print(
        f"\npublic scripts under emulation: {completed} of {ran} runnable completed; "
        f"{len(outcomes) - ran} not run (reasons above)"
    )
    totals: dict[str, int] = {}
    for outcome in outcomes:
        for kind, n in outcome.counts.items():
            totals[kind] = totals.get(kind, 0) + n
    files = sum(bool(o.counts) for o in outcomes)
    if files:
        tests = ", ".join(f"{n} {k}" for k, n in sorted(totals.items()))
        print(f"tests of the {files} test files run: {tests}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for key in REPOS:
        parser.add_argument(f"--{key}", type=Path, help=f"a checkout or git dir of {REPOS[key]}")
    parser.add_argument("--lightning-habana-ref", default="1.6.0")
    parser.add_argument("--optimum-habana-ref", default="HEAD")
    parser.add_argument("--only", default="", help="run the scripts whose name contains this")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per script")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    parser.add_argument(
        "--before", metavar="REF", help="also run each script on this repository's emulator at REF"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="before-") as before_dir:
        emulator = None
        if args.before:
            emulator = Path(before_dir)
            extract_suite(REPO, emulator, "runtime", args.before)
        return _run_all(args, emulator)


def _run_all(args: argparse.Namespace, emulator: Path | None) -> int:
    outcomes, before = [], []
    for script in SCRIPTS:
        if args.only not in script.name:
            continue
        checkout = getattr(args, script.repo.replace("-", "_"))
        if checkout is None and not script.excluded:
            outcomes.append(Outcome(script.name, "excluded", detail=f"--{script.repo} not given"))
            continue
        ref = getattr(args, f"{script.repo.replace('-', '_')}_ref", "HEAD")
        outcome = run_one(script, checkout, ref, args.timeout)
        print(f"{outcome.status:9} {outcome.seconds:6.1f}s  {script.name}", flush=True)
        outcomes.append(outcome)
        if emulator is not None:
            before.append(run_one(script, checkout, ref, args.timeout, emulator))
            print(f"  before: {before[-1].status} {before[-1].detail[-160:]}", flush=True)
    print()
    _report(outcomes)
    if emulator is not None:
        completed, ran = _tally(before)
        print(f"before ({args.before}), same scripts, same run: {completed} of {ran} completed")
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0 if all(o.status in ("completed", "excluded", "not installed") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
