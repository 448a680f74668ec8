"""`habana_frameworks.torch.hpex` (emulated). `hpex.hmp` and the fused optimizers are added by
the mixed-precision work; this package only makes `import habana_frameworks.torch.hpex` work."""
