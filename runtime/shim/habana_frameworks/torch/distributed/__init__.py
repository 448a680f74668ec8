"""Emulated `habana_frameworks.torch.distributed` (hpusim): see `hccl`."""
