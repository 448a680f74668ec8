"""The shim's hpex optimizers and kernels have the 1.19 bridge's signatures, at the bridge's
module paths (`from habana_frameworks.torch.hpex.kernels.CTCLoss import CTCLoss`, as scripts
write it).

`BRIDGE_1_19` was read from HabanaAI/gaudi-pytorch-bridge 1.19.0,
`python_packages/habana_frameworks/torch/hpex/**.py` (each public function, and `__init__`,
`forward`, `apply` and `step` of each public class; defaults as written there), for every name
the emulator provides with the same signature. Left out, with why:
- `backward` of the autograd functions: called by autograd positionally; the emulator's
  parameter names differ (`grad` for `grad_output`...).
- `FusedSGD.__init__`: `lr=required` (torch's sentinel) there, a required `lr` here.
- `FusedLars.step`: `(self)` there; `(self, closure=None)` here (Lightning passes a closure).
- `MarkstepAdam.Adam.__init__`: torch 2.13's Adam adds `decoupled_weight_decay`.
- `FusedAdamW.step`: torch's optimizer hook wraps it as `(*args, **kwargs)` for both.
- What the emulator declines (fp8 kernels with hardware scaling, `PySDPA`, fbgemm, embedding
  bags, sparse optimizers, `random_seed`, `RaggedSoftmax`) or keeps private.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

torch = pytest.importorskip("torch")

BRIDGE_1_19 = [
    (
        "kernels.CTCLoss",
        "CTCLoss.forward",
        "(ctx, log_probs, targets, input_lengths, target_lengths, blank=0, reduction='mean', zero_infinity=False)",
    ),
    ("kernels.CustomSoftmax", "CustomSoftmax.forward", "(ctx, inp, flavor)"),
    ("kernels.Fp8FusedSDPA", "gqa_output_reshape", "(tensor)"),
    ("kernels.FusedSDPA", "is_gqa", "(q, k)"),
    ("kernels.FusedSDPA", "gqa_input_reshape_fwd", "(q, k, v, attention_mask)"),
    ("kernels.FusedSDPA", "gqa_output_reshape", "(tensor)"),
    (
        "kernels.FusedSDPA",
        "FusedSDPA.forward",
        "(ctx, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, softmax_mode='None', recompute_mode=None, valid_seq_len=None, seq_padding_type='left', return_dropout_mask=False, return_attn_probs=False)",
    ),
    ("kernels.RotaryPosEmbeddingHelper", "match_data_types", "(input, cos, sin)"),
    ("kernels.RotaryPosEmbeddingHelper", "apply_rotary_pos_emb", "(p, *args)"),
    (
        "kernels.RotaryPosEmbeddingHelper",
        "apply_rotary_pos_emb_bwd",
        "(p_grad_in, cos, sin, position_ids=None, offset=0, mode=RotaryPosEmbeddingMode.BLOCKWISE)",
    ),
    (
        "kernels.RotaryPosEmbeddingHelper",
        "RotaryPosEmbeddingHelperV1.forward",
        "(ctx, p, cos, sin, offset)",
    ),
    (
        "kernels.RotaryPosEmbeddingHelper",
        "RotaryPosEmbeddingHelperV2.forward",
        "(ctx, p, cos, sin, position_ids)",
    ),
    ("kernels.RotaryPosEmbeddingHelper", "parse_rope_cache", "(p, rope_cache)"),
    (
        "kernels.RotaryPosEmbeddingHelper",
        "RotaryPosEmbeddingHelperV3.forward",
        "(ctx, p, rope_cache)",
    ),
    ("movingavrg.FusedEMA", "FusedEMA.__init__", "(self, model, decay=0.9999, updates=0)"),
    ("normalization.FusedClipNorm", "FusedClipNorm.__init__", "(self, parameters, max_norm)"),
    (
        "normalization.FusedRMSNorm",
        "FusedRMSNorm.forward",
        "(ctx, data_in, gamma, eps, use_stages=True, bwd_mode=0, fast_math=False)",
    ),
    (
        "optimizers.FusedAdagrad",
        "FusedAdagrad.__init__",
        "(self, params, lr=0.01, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10)",
    ),
    ("optimizers.FusedAdagrad", "FusedAdagrad.step", "(self, closure=None)"),
    (
        "optimizers.FusedAdamW",
        "FusedAdamW.__init__",
        "(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-06, weight_decay=0.0, bias_correction=True, moments_dtype=None)",
    ),
    (
        "optimizers.FusedLamb",
        "FusedLamb.__init__",
        "(self, params, lr=0.001, bias_correction=True, betas=(0.9, 0.999), eps=1e-06, weight_decay=0.01, amsgrad=False, adam_w_mode=True, grad_averaging=True, set_grad_none=True, max_grad_norm=1.0, use_lamb=False, fused=False, dtype=None)",
    ),
    ("optimizers.FusedLamb", "FusedLamb.step", "(self, closure=None)"),
    (
        "optimizers.FusedLars",
        "FusedLars.__init__",
        "(self, optimizer, skip_mask, eeta=0.001, eps=1e-08)",
    ),
    (
        "optimizers.FusedResourceApplyMomentum",
        "FusedResourceApplyMomentum.__init__",
        "(self, params, lr, momentum=0, weight_decay=0, nesterov=False)",
    ),
    (
        "optimizers.FusedResourceApplyMomentum",
        "FusedResourceApplyMomentum.step",
        "(self, closure=None)",
    ),
    ("optimizers.FusedSGD", "FusedSGD.step", "(self, closure=None)"),
    (
        "optimizers.MarkstepAdamW",
        "AdamW.__init__",
        "(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False, *, maximize=False, foreach=None, capturable=False, differentiable=False, fused=None)",
    ),
    (
        "optimizers.distributed.FusedAdamW",
        "FusedAdamW.__init__",
        "(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-06, weight_decay=0.0, _allow_empty_param_list=False, moments_dtype=None)",
    ),
    ("optimizers.distributed.FusedAdamW", "FusedAdamW.step", "(self, gradients)"),
]


def _signature(obj: Any) -> str:
    sig = inspect.signature(obj)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    text = str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
    return text.replace("<RotaryPosEmbeddingMode.BLOCKWISE: 0>", "RotaryPosEmbeddingMode.BLOCKWISE")


@pytest.mark.parametrize(("module", "name", "bridge"), BRIDGE_1_19)
def test_hpex_signatures_are_the_bridges(hpu: Any, module: str, name: str, bridge: str) -> None:
    hpu()
    obj: Any = importlib.import_module(f"habana_frameworks.torch.hpex.{module}")
    for part in name.split("."):
        obj = getattr(obj, part)
    assert _signature(obj) == bridge


SAME_NAMED = [
    ("kernels", ("CTCLoss", "CustomSoftmax", "FusedSDPA", "PySDPA")),
    ("optimizers", ("FusedAdagrad", "FusedAdamW", "FusedLamb", "FusedLars", "FusedSGD")),
    ("optimizers", ("FusedResourceApplyMomentum",)),
    ("normalization", ("FusedClipNorm", "FusedRMSNorm")),
    ("movingavrg", ("FusedEMA",)),
    ("optimizers.distributed", ("FusedAdamW",)),
]


@pytest.mark.parametrize(("package", "names"), SAME_NAMED)
def test_importing_a_same_named_module_leaves_the_package_its_class(
    hpu: Any, package: str, names: tuple[str, ...]
) -> None:
    """`hpex.kernels.CTCLoss` is the class even after `import hpex.kernels.CTCLoss` (the module
    of that name): the bridge's package `__init__`s import each class from its module
    (`hpex/kernels/__init__.py`, `optimizers/__init__.py`, `normalization/__init__.py`,
    `movingavrg/__init__.py`, `optimizers/distributed/__init__.py`), so the module is loaded
    before the name is bound to the class. Importing the module first rebound the name to the
    module here, and every later `kernels.CTCLoss.apply` failed."""
    hpu()
    root = "habana_frameworks.torch.hpex"
    for name in names:
        module = importlib.import_module(f"{root}.{package}.{name}")
        owner = importlib.import_module(f"{root}.{package}")
        assert getattr(owner, name) is getattr(module, name), f"{package}.{name}"
