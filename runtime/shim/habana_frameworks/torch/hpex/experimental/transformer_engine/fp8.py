"""`transformer_engine.fp8` (emulated): `te.Linear` under `fp8_autocast` runs in FP8 on the
emulated card (`hpusim.transformer_engine`); the fp8 scaling kernels beyond it do not."""

from hpusim.transformer_engine import is_fp8_enabled

__all__ = ["FP8GlobalStateManager", "is_fp8_available", "is_fp8_enabled"]
"""`is_fp8_enabled()` is module-level, as in Intel's Gaudi transformer_engine (lightning-habana's
precision tests call `tengine.fp8.is_fp8_enabled()`): True inside `fp8_autocast`."""

REASON = (
    "fp8 scaling kernels need the Gaudi's fp8 hardware; not available under the hpusim emulator"
)


def is_fp8_available() -> tuple[bool, str]:
    """`(False, reason)`: the fp8 scaling kernels clients gate on are not emulated (clients
    that pass this check use them); `te.Linear` under `fp8_autocast` still runs in FP8."""
    return False, REASON


class FP8GlobalStateManager:
    """fp8 global state: enabled inside `fp8_autocast`."""

    @staticmethod
    def is_fp8_enabled() -> bool:
        return is_fp8_enabled()

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
