"""`habana_frameworks.torch.hpex.experimental` (emulated): the Transformer Engine FP8 surface."""
