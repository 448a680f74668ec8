"""`transformer_engine.fp8` (emulated): fp8 is not available on the emulated card."""

REASON = "fp8 needs the Gaudi's fp8 hardware; not available under the hpusim emulator"


def is_fp8_available() -> tuple[bool, str]:
    """`(False, reason)`: the emulator has no fp8 MME."""
    return False, REASON


def is_fp8_enabled() -> bool:
    """Module-level status query of Intel's Gaudi transformer_engine (lightning-habana's
    precision tests call `tengine.fp8.is_fp8_enabled()`): never enabled on the emulated card."""
    return False


class FP8GlobalStateManager:
    """fp8 global state: fp8 is never enabled on the emulated card."""

    @staticmethod
    def is_fp8_enabled() -> bool:
        return False

    @staticmethod
    def reset_global_state() -> None:
        return None

    @staticmethod
    def get_manual_measurement_mode() -> None:
        return None

    @staticmethod
    def set_measurement_mode(manual: bool, mode: bool) -> None:
        raise NotImplementedError(
            "transformer_engine.fp8.FP8GlobalStateManager.set_measurement_mode is not available "
            f"under the hpusim emulator: {REASON}"
        )
