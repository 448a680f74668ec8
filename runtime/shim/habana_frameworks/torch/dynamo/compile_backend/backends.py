"""`compile_backend.backends` (emulated): the `hpu_backend` function dynamo calls."""

from hpusim.compile_backend import hpu_backend


def import_compilers() -> None:
    """The bridge imports its compilers lazily; the emulator's backend is already registered."""
    from hpusim import compile_backend

    compile_backend.install()


def import_hpu_partition() -> None:
    return None


__all__ = ["hpu_backend", "import_compilers", "import_hpu_partition"]
