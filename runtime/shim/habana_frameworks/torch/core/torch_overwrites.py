"""`habana_frameworks.torch.core.torch_overwrites` (emulated): `_name_stack`, the module-name
stack the bridge keeps with forward hooks (the emulator attributes modules itself, so it stays
empty between forwards, as the bridge's test expects)."""

from collections import deque

_name_stack: deque[str] = deque()


def overwrite_torch_functions() -> None:
    return None


def overwrite_capture_pre_autograd_graph() -> None:
    return None


def overwrite_native_pt2e_quantization_interface() -> None:
    return None
