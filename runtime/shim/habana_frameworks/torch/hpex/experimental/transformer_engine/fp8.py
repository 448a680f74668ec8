"""`transformer_engine.fp8` (emulated): fp8 is not available on the emulated card."""

REASON = "fp8 needs the Gaudi's fp8 hardware; not available under the hpusim emulator"


def is_fp8_available() -> tuple[bool, str]:
    """`(False, reason)`: the emulator has no fp8 MME."""
    return False, REASON
