"""`habana_frameworks.torch.utils.library_loader` (emulated).

`load_habana_module()` has nothing to load (the emulator is already installed);
`is_habana_available()` asks `hl-smi -v` like the bridge, and the emulated process's `hl-smi`
answers for the emulated card."""

import subprocess


def is_habana_available() -> bool:
    try:
        out = subprocess.check_output("hl-smi -v", stderr=subprocess.STDOUT, shell=True).decode()
    except (OSError, subprocess.CalledProcessError):
        return False
    return "Habana" in out


def load_habana_module() -> None:
    import hpusim

    if not hpusim.is_enabled():
        hpusim.enable()


def load_habana_profiler() -> None:
    return None


__all__ = ["is_habana_available", "load_habana_module", "load_habana_profiler"]
