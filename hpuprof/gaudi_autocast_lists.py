"""Gaudi's default autocast op lists (gaudi.md section 5.1), shared as plain data.

The emulated runtime applies them (`hpusim.autocast`) and the precision report checks traces
against them (`hpuprof.analysis.precision`): one copy, so the two cannot drift apart.
This module imports nothing heavy.
"""

from __future__ import annotations

from typing import Final

DEFAULT_LOWER_OPS: Final = [
    "addmm",
    "addbmm",
    "batch_norm",
    "baddbmm",
    "bmm",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "dot",
    "dropout",
    "feature_dropout",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "leaky_relu",
    "linear",
    "matmul",
    "mean",
    "mm",
    "mul",
    "mv",
    "softmax",
    "log_softmax",
    "scaled_dot_product_attention",
]
"""`default_lower_ops` of the bridge (hpu_ops/autocast_helpers.h; docs 1.23)."""

DEFAULT_FP32_OPS: Final = [
    "acos",
    "addcdiv",
    "asin",
    "atan2",
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cdist",
    "cosh",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy_loss",
    "dist",
    "div",
    "divide",
    "embedding",
    "embedding_bag",
    "erfinv",
    "exp",
    "expm1",
    "hinge_embedding_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "log",
    "log10",
    "log1p",
    "log2",
    "logsumexp",
    "margin_ranking_loss",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "nll_loss",
    "pdist",
    "poisson_nll_loss",
    "pow",
    "reciprocal",
    "renorm",
    "rsqrt",
    "sinh",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softplus",
    "tan",
    "topk",
    "triplet_margin_loss",
    "truediv",
    "true_divide",
]
"""`default_fp32_ops` of the bridge."""
