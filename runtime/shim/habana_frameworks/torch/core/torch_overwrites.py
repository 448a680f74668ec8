"""`habana_frameworks.torch.core.torch_overwrites` (emulated): `_name_stack`, the module-name
stack the bridge's lazy-mode forward hooks keep (`hpusim.module_names`, installed with a lazy
session; empty between forwards, as the bridge's test expects). The wraps of torch that the
bridge's `overwrite_torch_functions()` makes at import are made by `enable()` here
(`hpusim.rng`, `hpusim.module_names`), so the functions do nothing."""

from hpusim.module_names import NAME_STACK as _name_stack

__all__ = ["_name_stack"]


def overwrite_torch_functions() -> None:
    return None


def overwrite_capture_pre_autograd_graph() -> None:
    return None


def overwrite_native_pt2e_quantization_interface() -> None:
    return None
