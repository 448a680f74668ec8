"""What real training scripts call works under `hpuprof predict`: FusedSDPA with dropout in
training (both recompute modes), and the hpex optimizers with the 1.19 bridge's signatures
(python_packages/habana_frameworks/torch/hpex in the 1.19.0 source; MLPerf ResNet-50 passes
`weight_decay` to FusedResourceApplyMomentum) and its kernels' semantics."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

SCRIPT = """
import torch
import habana_frameworks.torch.core as htcore
from habana_frameworks.torch.hpex.kernels import FusedSDPA
from habana_frameworks.torch.hpex.optimizers import FusedResourceApplyMomentum
proj = torch.nn.Linear(64, 64).to("hpu")
opt = FusedResourceApplyMomentum(proj.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
k = torch.randn(2, 4, 128, 64).to("hpu")
v = torch.randn(2, 4, 128, 64).to("hpu")
for step in range(3):
    q = proj(torch.randn(2, 4, 128, 64).to("hpu"))
    out = FusedSDPA.apply(q, k, v, None, 0.1, False, None, "None", {recompute})
    out.float().pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
    htcore.mark_step()
"""


@pytest.mark.parametrize("recompute", [True, False])
def test_fused_sdpa_with_dropout_trains_under_predict(
    tmp_path: Path, run_predict: Any, recompute: bool
) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("{recompute}", str(recompute)))
    code, out, err = run_predict(str(script))
    assert code == 0, err[-2000:]
    data = json.loads(out)
    assert data["steps"] == 3 and data["step_time_s"] > 0
    assert data["model_flops_per_step"] > 0


def test_resource_apply_momentum_follows_the_bridges_kernel() -> None:
    """First step: the gradient becomes the buffer and is added; then the kernel's
    buf = buf * momentum - grad, param += buf."""
    import hpusim
    from hpusim.hpex import FusedResourceApplyMomentum

    hpusim.enable("eager")
    try:
        p = torch.nn.Parameter(torch.tensor([1.0, 2.0]).to("hpu"))
        opt = FusedResourceApplyMomentum([p], lr=0.1, momentum=0.5, weight_decay=1e-4)
        p.grad = torch.tensor([0.5, 1.0]).to("hpu")
        opt.step()
        assert p.detach().cpu().tolist() == [1.5, 3.0]
        p.grad = torch.tensor([1.0, 1.0]).to("hpu")
        opt.step()  # buf = [0.25, 0.5] - 1 = [-0.75, -0.5]
        assert p.detach().cpu().tolist() == [0.75, 2.5]
        with pytest.raises(ValueError, match="Nesterov momentum requires a momentum"):
            FusedResourceApplyMomentum([p], lr=0.1, nesterov=True)
    finally:
        hpusim.disable()


def test_fused_ema_keeps_an_fp32_copy_of_the_model() -> None:
    import hpusim
    from hpusim.hpex import FusedEMA

    hpusim.enable("eager")
    try:
        model = torch.nn.Linear(2, 1, bias=False).to("hpu")
        with torch.no_grad():
            model.weight.fill_(1.0)
        ema = FusedEMA(model, decay=0.5)
        assert not ema.ema.training and ema.ema is not model
        with torch.no_grad():
            model.weight.fill_(3.0)
        ema.update(model)
        d = 0.5 * (1 - torch.exp(torch.tensor(-1 / 2000)).item())
        expected = 1.0 * d + 3.0 * (1 - d)
        assert ema.ema.weight.detach().cpu().reshape(-1).tolist() == pytest.approx([expected] * 2)
        assert ema.updates == 1
    finally:
        hpusim.disable()


COMPILED = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512))
model = torch.compile(model.to("hpu"), backend="hpu_backend")
lin = torch.nn.Linear(4, 4).to("hpu")
def f(x):
    y = lin(x) * 2
    if y.sum() > 0:  # data-dependent: a graph break
        y = y + 1
    return (y[: x.shape[0] // 2].relu() ** 2).mean()
cf = torch.compile(f, backend="hpu_backend", dynamic=True)
opt = torch.optim.SGD([*model.parameters(), *lin.parameters()], lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 512).to("hpu")).pow(2).mean()
    loss = loss + cf(torch.randn(8 - step, 4).to("hpu"))
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def _predict_compiled(tmp_path: Path, run_predict: Any, source: str) -> dict[str, Any]:
    """The prediction of `source` under `hpuprof predict --mode compile` (which must succeed)."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    code, out, err = run_predict(str(script), options=("--mode", "compile"))
    assert code == 0, err[-3000:]
    data: dict[str, Any] = json.loads(out)
    assert data["steps"] == 3  # (compile mode runs the eager bridge under dynamo)
    return data


def test_compiled_models_and_graph_breaks_are_predicted(tmp_path: Path, run_predict: Any) -> None:
    """torch.compile(model, backend="hpu_backend") of a host-built model, and a dynamic
    compiled function with a graph break, under `hpuprof predict --mode compile`."""
    data = _predict_compiled(tmp_path, run_predict, COMPILED)
    assert data["compilations"] >= 2 and data["step_time_s"] > 0


SQUAD_STEP = """
import torch
import transformers as tf
cfg = tf.RobertaConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=128,
                       max_position_embeddings=130, type_vocab_size=1,
                       attn_implementation="eager")
torch.manual_seed(0)
model = tf.RobertaForQuestionAnswering(cfg).to("hpu")
model.train()
model = torch.compile(model, backend="hpu_backend")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
b, s = 4, 64
for step in range(3):
    inputs = {"input_ids": torch.randint(0, 1000, (b, s)),
              "attention_mask": torch.ones(b, s, dtype=torch.long),
              "start_positions": torch.randint(0, s, (b,)),
              "end_positions": torch.randint(0, s, (b,))}
    inputs = {k: v.to("hpu") for k, v in inputs.items()}
    with torch.autocast("hpu", dtype=torch.bfloat16):
        loss = model(**inputs).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_a_compiled_question_answering_model_trains_under_autocast(
    tmp_path: Path, run_predict: Any
) -> None:
    """Issue 22: a Hugging Face question-answering model compiled with `hpu_backend` and
    trained as optimum-habana's Trainer runs it with `--torch_compile` (autocast entered
    around the compiled model; its loss and its logits returned). It failed in dynamo's shape
    guards (an IndexError in `produce_guards`: the emulator's autocast broke the graph at every
    op, and the fake inputs dynamo built from the views crossing each break guarded on
    ephemeral sizes), then in AOT autograd's backward (the unused logits' zero gradients were
    host tensors)."""
    pytest.importorskip("transformers")
    data = _predict_compiled(tmp_path, run_predict, SQUAD_STEP)
    assert data["compilations"] == 2  # one graph: its forward and backward recipes, no breaks
    assert data["recompilations"] == 0
    assert data["model_flops_per_step"] > 0 and data["tokens_per_step"] == 4 * 64
