"""`transformer_engine.fp8` (emulated): `te.Linear` under `fp8_autocast` runs in FP8 on the
emulated card (`hpusim.transformer_engine`); the fp8 scaling kernels beyond it do not."""

from hpusim.transformer_engine import is_fp8_enabled

__all__ = ["FP8GlobalStateManager", "is_fp8_available", "is_fp8_enabled"]
"""`is_fp8_enabled()` is module-level, as in Intel's Gaudi transformer_engine (lightning-habana's
precision tests call `tengine.fp8.is_fp8_enabled()`): True inside `fp8_autocast`."""

REASON = (
    "fp8 scaling kernels need the Gaudi's fp8 hardware; not available under the hpusim emulator"
)
NO_FP8_DEVICE = "FP8 needs Gaudi 2 or later: the emulated device has no FP8 MME"


def is_fp8_available() -> tuple[bool, str]:
    """As Intel's transformer_engine answers on the emulated device: `(True, "")` on a card
    with an FP8 MME (Gaudi 2 and 3; `te.Linear` under `fp8_autocast` runs in FP8 there, which is
    what clients that pass this check use, lightning-habana's fp8 training among them)."""
    from hpusim import state

    rt = state.RT
    if rt is None or rt.profile.mme_fp8_tflops <= 0:
        return False, NO_FP8_DEVICE
    return True, ""


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
