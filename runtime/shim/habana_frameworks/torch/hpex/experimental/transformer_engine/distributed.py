"""`transformer_engine.distributed` (emulated)."""

from hpusim.hpex import unavailable_function

activation_checkpointing = unavailable_function(
    "habana_frameworks.torch.hpex.experimental.transformer_engine.distributed."
    "activation_checkpointing",
    "fp8 activation recompute is not emulated",
)
