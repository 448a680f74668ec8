"""`habana_frameworks.torch.hpex` (emulated): `kernels`, `optimizers`, `normalization`,
`movingavrg`, `hmp`, and `experimental.transformer_engine` (fp8: not available)."""
