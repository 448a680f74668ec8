"""`habana_frameworks.torch.internal` (emulated): `bridge_config`."""
