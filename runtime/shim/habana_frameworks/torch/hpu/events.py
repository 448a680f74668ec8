"""`habana_frameworks.torch.hpu.events` (emulated): events on the modeled device clock."""

from hpusim.device_module import Event

__all__ = ["Event"]
