"""`transformer_engine.distributed` (emulated)."""

from hpusim.transformer_engine import activation_checkpointing

__all__ = ["activation_checkpointing"]
