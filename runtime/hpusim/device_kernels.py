"""What an op on hpu tensors runs where the bridge registers an HPU kernel that CPU torch's
kernel for the op does not stand for: by the op's overload name (`fallback.overload_name`).

- `aten::convolution_overrideable` (and its backward) is the hook torch leaves for out-of-tree
  backends: the 1.19 bridge registers its convolution there (`bridge_registered_ops.txt`);
  CPU torch has no kernel ("convolution_overrideable not implemented"). The stand-in is
  `aten::convolution`, the same arguments.
- the `quantized_decomposed` ops the bridge runs as TPC kernels (`hpusim.quant_ops`).

Every other op runs CPU torch's own kernel (`dispatch.OpInfo.call`).
"""

from __future__ import annotations

from typing import Any, Final

import torch

from hpusim.quant_ops import KERNELS as QUANT_KERNELS


def _convolution(*args: Any) -> Any:
    return torch.ops.aten.convolution.default(*args)


def _convolution_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    *rest: Any,
) -> Any:
    """torch's convolution_backward; the bias gradient's size is the output's channels."""
    bias_sizes = [grad_output.shape[1]]
    return torch.ops.aten.convolution_backward.default(
        grad_output, input, weight, bias_sizes, *rest
    )


KERNELS: Final[dict[str, Any]] = {
    "aten::convolution_overrideable": _convolution,
    "aten::convolution_backward_overrideable": _convolution_backward,
    **QUANT_KERNELS,
}
