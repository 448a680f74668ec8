"""`habana_frameworks.torch.profiler` (emulated): the bridge's package is empty but for
`ProfilerApi` (profiler/ProfilerApi.py)."""
