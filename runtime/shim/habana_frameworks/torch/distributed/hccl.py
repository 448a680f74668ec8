"""Emulated `habana_frameworks.torch.distributed.hccl`: importing it registers the `hccl`
torch.distributed backend (gloo on the emulator's inner CPU tensors; `hpusim.distributed`)."""

from hpusim import distributed as _distributed

_distributed.install()
