"""`habana_frameworks.torch.hpex.experimental` (emulated): `transformer_engine` (fp8)."""
