"""Under fake compute (`hpuprof predict`) a model built on the host costs no host memory: large
host tensors are fake from the script's first line, `.to("hpu")` of one is a fake hpu tensor,
host reads of them get stand-ins; torch's factories are restored at disable. And the batch is
counted once per call of the outermost model (a loss module called beside it does not count)."""

from __future__ import annotations

import json
import resource
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "bench" / "calibration" / "train_decoder.py"


@pytest.fixture
def fake_runtime() -> Any:
    import hpusim

    hpusim.enable("lazy", compute="fake")
    yield
    hpusim.disable()


def test_a_host_built_model_is_fake_and_moves_to_the_device(fake_runtime: Any) -> None:
    from hpusim.host_fake import is_fake_host

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    big = torch.nn.Linear(32768, 32768)  # 4 GiB of fp32 weights, initialized in place
    small = torch.nn.LayerNorm(64)
    grown_gb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1e6
    assert is_fake_host(big.weight) and big.weight.device.type == "cpu"
    assert isinstance(big.weight, torch.nn.Parameter)
    assert not is_fake_host(small.weight)  # small host tensors stay real
    assert small.weight.sum().item() == 64.0
    assert grown_gb < 1.0, grown_gb
    big.to("hpu")
    assert big.weight.device.type == "hpu" and big.weight.shape == (32768, 32768)
    assert isinstance(big.weight, torch.nn.Parameter)


def test_a_model_built_on_the_device_stays_there() -> None:
    """`with torch.device("hpu")` still gives the (wrapped) factories the hpu device, also
    when torch builds its set of device factories only after fake compute began."""
    import hpusim
    from torch.utils._device import _device_constructors

    _device_constructors.cache_clear()
    hpusim.enable("lazy", compute="fake")
    try:
        with torch.device("hpu"):
            weight = torch.nn.Linear(4096, 4096).weight
            ones = torch.ones(1024, 1024)
        assert weight.device.type == "hpu" and ones.device.type == "hpu"
        with torch.device("cpu"):
            assert torch.ones(1024, 1024).device.type == "cpu"
    finally:
        hpusim.disable()


def test_host_reads_of_a_fake_host_tensor_get_stand_ins(fake_runtime: Any) -> None:
    t = torch.randn(1024, 1024)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert t.sum().item() == 1.0
        assert t[0, :2].tolist() == [1.0, 1.0]
    assert any("stand-in" in str(w.message) for w in caught)
    assert "size=(1024, 1024)" in repr(t)  # printing says what it is, no crash


def test_the_factories_are_torchs_own_again_after_disable() -> None:
    import hpusim
    from hpusim.host_fake import FACTORIES

    originals = {name: getattr(torch, name) for name in FACTORIES}
    hpusim.enable("lazy", compute="fake")
    try:
        assert torch.empty is not originals["empty"]
    finally:
        hpusim.disable()
    assert {name: getattr(torch, name) for name in FACTORIES} == originals
    assert type(torch.empty(1024, 1024)) is torch.Tensor


def _prediction(run_predict: Any, *command: str) -> dict[str, Any]:
    code, out, err = run_predict(*command)
    assert code == 0, err[-2000:]
    data: dict[str, Any] = json.loads(out)
    return data


def test_host_built_and_device_built_models_predict_the_same_device_work(
    run_predict: Any,
) -> None:
    args = (str(TRAIN), "--layers", "1", "--seq", "256", "--steps", "2", "--fp32")
    device = _prediction(run_predict, *args)
    host = _prediction(run_predict, *args, "--build-on", "host")
    assert host["model_flops_per_step"] == device["model_flops_per_step"]
    assert host["peak_hbm_gib"] == pytest.approx(device["peak_hbm_gib"], rel=0.02)
    assert host["tokens_per_step"] == device["tokens_per_step"] == 256


STEP = """
import torch
import habana_frameworks.torch.core as htcore
model = torch.nn.Sequential(torch.nn.Embedding(100, 16), torch.nn.Linear(16, 100)).to("hpu")
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    ids = torch.randint(0, 100, (4, 32)).to("hpu")
    {call}
    loss = loss_fn(logits.reshape(-1, 100), ids.reshape(-1))
    loss.backward()
    opt.step()
    htcore.mark_step()
"""


@pytest.mark.parametrize("call", ["logits = model(ids)", "logits = model(input=ids)"])
def test_the_batch_is_counted_once_per_model_call(
    tmp_path: Path, run_predict: Any, call: str
) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(STEP).replace("{call}", call))
    data = _prediction(run_predict, str(script))
    assert data["samples_per_step"] == 4  # not 4 + 128 from the loss's [128, 100] logits
    assert data["tokens_per_step"] == 4 * 32


HF_STEP = """
import torch
import habana_frameworks.torch.core as htcore
from transformers import AutoModelForCausalLM, LlamaConfig
from hpusim.host_fake import is_fake_host
cfg = LlamaConfig(hidden_size=512, intermediate_size=2048, num_hidden_layers=1,
                  num_attention_heads=8, num_key_value_heads=8, vocab_size=4096)
model = AutoModelForCausalLM.from_config(cfg)
assert is_fake_host(model.model.layers[0].mlp.up_proj.weight)
model = model.to("hpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(2):
    ids = torch.randint(0, 4096, (2, 64)).to("hpu")
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad()
    htcore.mark_step()
"""


def test_a_hugging_face_model_from_config_on_the_host(tmp_path: Path, run_predict: Any) -> None:
    pytest.importorskip("transformers")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(HF_STEP))
    data = _prediction(run_predict, str(script))
    assert data["steps"] == 2 and data["model_flops_per_step"] > 0
    assert data["samples_per_step"] == 2 and data["tokens_per_step"] == 2 * 64  # by keyword


def test_a_device_op_that_makes_its_output_with_a_factory_stays_on_the_device(
    fake_runtime: Any,
) -> None:
    """The backward of advanced indexing makes its gradient with `new_zeros`, whose reference
    implementation calls `torch.full`: on a large tensor that call must not become a fake host
    tensor mixed into the device op's inputs (MLPerf BERT's masked-position gather failed with
    'Mismatching aten.index_put.default device between self (cpu) and values (meta)')."""
    x = torch.randn(1024, 512, device="hpu", requires_grad=True)  # 2 MiB: past the host limit
    picked = x[torch.arange(0, 1024, 8, device="hpu")]
    picked.sum().backward()
    assert x.grad is not None and x.grad.device.type == "hpu"
    assert tuple(x.grad.shape) == (1024, 512)


def test_a_checkpoint_is_mapped_not_read_and_a_model_loaded_from_it_moves_for_free(
    tmp_path: Path,
) -> None:
    """Under fake compute `torch.load` maps a checkpoint (`mmap=True` unless the script says):
    its values are real and read on demand; loading it into a model and moving that to the
    device costs no host memory for the 128 MiB of weights."""
    import hpusim

    weights = torch.arange(4096 * 8192, dtype=torch.float32).reshape(8192, 4096)
    path = tmp_path / "ckpt.pt"
    torch.save({"weight": weights, "bias": torch.zeros(8192)}, path)
    del weights
    torch_load = torch.load
    hpusim.enable("lazy", compute="fake")
    try:
        before = _rss_now()
        state = torch.load(path)
        model = torch.nn.Linear(4096, 8192)  # fake: 128 MiB, past the host limit
        model.load_state_dict(state, assign=True)
        model.to("hpu")
        grown_mib = (_rss_now() - before) / 2**20
        assert float(state["weight"][3, 5]) == 3 * 4096 + 5  # real values, read on demand
        assert model.weight.device.type == "hpu"
        assert grown_mib < 32, grown_mib
    finally:
        hpusim.disable()
    assert torch.load is torch_load  # (disable restores torch's own)


def _rss_now() -> int:
    """This process's resident set now (bytes)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()
