"""Capture: `HPUProfiler`, its backends, crash-safe writers and run directories.

`hpuprof.capture.profiler.HPUProfiler` is the entry point (also `hpuprof.HPUProfiler`), a facade
over the capture session (`session.py`: backend, steps, windows), the run writer
(`run_writer.py`: trace, metrics, `run.json`) and the process hooks (`process_hooks.py`:
signals, atexit, optimizer hook, window timer). `hpuprof record` / `hpuprof demo` live in
`record_session.py`, emulated cards in `cards.py`, the Perfetto export after a run in
`perfetto_export.py`. Nothing here imports torch or the emulator at import time; backends
import them when they start.
"""
