"""Start-up of the child processes of an emulated run (the shim is on their `PYTHONPATH` only
while hpusim emulates; see `hpusim/environment.py`).

A child may import torchvision before anything enables the emulator: a DataLoader worker
started with "spawn" unpickles its dataset first, a launcher's per-card process imports its
libraries first. So that PyPI's torchvision imports there as in the emulated process, the
child gets the same import hook (`hpusim.torchvision_ops`: it imports nothing heavy until
torchvision is imported). Then the `sitecustomize` this one shadows, if any (a venv's or the
system's), runs as it would have.
"""

from __future__ import annotations


def _serve_torchvision() -> None:
    try:
        from hpusim import torchvision_ops
    except ImportError:  # an interpreter without hpuprof's packages: nothing to serve
        return
    torchvision_ops.install()


def _run_the_shadowed_one() -> None:
    import importlib.machinery
    import importlib.util
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    rest = [p for p in sys.path if p and Path(p).resolve() != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_serve_torchvision()
_run_the_shadowed_one()
