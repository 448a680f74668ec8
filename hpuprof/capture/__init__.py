"""Capture: `HPUProfiler`, its backends, crash-safe writers and run directories.

`hpuprof.capture.profiler.HPUProfiler` is the entry point (also `hpuprof.HPUProfiler`). Nothing
here imports torch or the emulator at import time; backends import them when they start.
"""
