"""`habana_frameworks.torch.gpu_migration` (emulated): importing it migrates CUDA APIs to the
emulated HPU, as Intel's GPU Migration Toolkit does (hpusim/gpu_migration.py), until the
emulator is disabled. `PT_HPU_GPU_MIGRATION=1` does the same at `hpusim.enable()`."""

import hpusim.gpu_migration as _migration

_migration.install()
