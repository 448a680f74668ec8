"""The table of `tools/run_public_scripts.py` and the stand-ins it stages for downloads: every
entry names data the tool can write, and the staged ImageNet folder and tiny BERT are what the
scripts that read them need (the scripts themselves run in the tool, minutes each)."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


@pytest.fixture
def tool(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("run_public_scripts")


def test_every_entry_is_named_once_and_stages_known_data_inside_its_folder(
    tool: ModuleType,
) -> None:
    names = [script.name for script in tool.SCRIPTS]
    assert len(names) == len(set(names))
    for script in tool.SCRIPTS:
        assert set(script.data) <= set(tool.DATA), script.name
        assert script.repo in tool.REPOS, script.name
        folder = tool._extracted_folder(script)
        assert Path(script.path).is_relative_to(folder), script.name
    runnable = {(script.repo, script.path) for script in tool.SCRIPTS if not script.excluded}
    assert len(runnable) >= 40  # issue 24: at least 40 public scripts and test files (distinct)


def test_a_test_file_completes_when_pytest_runs_it_and_keeps_its_tally(tool: ModuleType) -> None:
    """A test file's entry "completes" when pytest ran it to the end, whatever its tests gave
    (exit 1: some failed), with the closing tally as counts (not a test's own printed words)
    and the failed tests as the detail; a file pytest could not run (exit 2: a collection
    error) has "failed"."""
    ran = "epoch 0: 5 passed\nFAILED t.py::a - RuntimeError: x\n1 failed, 2 passed, 1 xfailed in 3.1s\n"
    outcome = tool.pytest_outcome("t", 1, ran, 4.0)
    assert outcome.status == "completed"
    assert outcome.counts == {"failed": 1, "passed": 2, "xfailed": 1}
    assert outcome.detail == "FAILED t.py::a - RuntimeError: x"
    clean = tool.pytest_outcome("t", 0, "3 passed, 1 warning in 0.5s\n", 1.0)
    assert (clean.status, clean.counts, clean.detail) == ("completed", {"passed": 3}, "")
    broken = "ImportError while importing test module 't.py'.\nE   ModuleNotFoundError: x\n"
    broken += "1 error in 0.8s\n"
    stopped = tool.pytest_outcome("t", 2, broken, 1.0)
    assert (stopped.status, stopped.counts) == ("failed", {"error": 1})
    assert stopped.detail.startswith("ImportError while importing test module")


def test_the_imagenet_folder_is_what_imagefolder_and_top5_accuracy_need(
    tool: ModuleType, tmp_path: Path
) -> None:
    from PIL import Image

    tool.DATA["imagenet-folder"](tmp_path)
    root = tmp_path / "imagenet"
    train = sorted(p.name for p in (root / "train").iterdir())
    val = sorted(p.name for p in (root / "val").iterdir())
    # torchvision's reference sizes its head by the classes found and takes the top 5
    assert train == val and len(train) >= 5
    images = sorted(root.rglob("*.JPEG"))
    assert {p.parent.name for p in images} == set(train)
    for path in images:
        with Image.open(path) as image:
            assert (image.format, image.mode) == ("JPEG", "RGB")


def test_the_tiny_bert_tokenizes_the_staged_text_without_unknown_words(
    tool: ModuleType, tmp_path: Path
) -> None:
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    tool.DATA["tiny-bert"](tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "tiny-bert")
    line = (tmp_path / "data" / "train.txt").read_text().splitlines()[0]
    ids = tokenizer(line)["input_ids"]
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    assert tokenizer.unk_token_id not in ids
    assert len(ids) == len(line.split()) + 2  # one WordPiece per staged word


def test_the_mnist_files_are_torchvisions_idx_files_at_the_sizes_asked(
    tool: ModuleType, tmp_path: Path
) -> None:
    """What `torchvision.datasets.MNIST` reads from MNIST/raw (IDX: magic 0x0803 / 0x0801, the
    dimensions big-endian, then uint8 values): `train` and `test` images of 28 x 28 with about
    MNIST's 19 % of the pixels lit, labels 0-9 (lightning's demo datamodule holds 5,000 training
    images out, so its tool asks for MNIST's 60,000)."""
    import numpy as np

    tool.torchvision_mnist_files(tmp_path, train=6_000, test=100)
    raw = tmp_path / "MNIST" / "raw"
    for prefix, count in (("train", 6_000), ("t10k", 100)):
        images = (raw / f"{prefix}-images-idx3-ubyte").read_bytes()
        assert int.from_bytes(images[:4], "big") == 0x0803
        dims = [int.from_bytes(images[4 + 4 * i : 8 + 4 * i], "big") for i in range(3)]
        assert dims == [count, 28, 28]
        pixels = np.frombuffer(images[16:], dtype=np.uint8)
        assert pixels.size == count * 784
        assert 0.17 < float((pixels > 0).mean()) < 0.21
        labels = (raw / f"{prefix}-labels-idx1-ubyte").read_bytes()
        assert int.from_bytes(labels[:4], "big") == 0x0801
        assert int.from_bytes(labels[4:8], "big") == count
        values = np.frombuffer(labels[8:], dtype=np.uint8)
        assert values.size == count and set(values.tolist()) == set(range(10))
