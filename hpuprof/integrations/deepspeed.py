"""lightning-habana's `HPUDeepSpeedStrategy` on PyPI's DeepSpeed (extras `clients`, `deepspeed`).

lightning-habana 1.6.0 accepts one DeepSpeed only, Habana's fork at the exact version
`0.14.0+hpu.synapse.v1.16.0`: `_HPU_DEEPSPEED_AVAILABLE` is a `RequirementCache` of that pin
(`lightning_habana/pytorch/strategies/deepspeed.py` and `.../plugins/deepspeed_precision.py`),
and `HPUDeepSpeedStrategy` / `HPUDeepSpeedPrecisionPlugin` raise `MisconfigurationException`
without it, on a Gaudi as under emulation. PyPI's DeepSpeed (0.15 on) carries the fork's HPU
accelerator upstream (`deepspeed/accelerator/hpu_accelerator.py`, selected when
`habana_frameworks.torch.hpu` imports), so the strategy's code runs on it once the pin is waived.

`accept_pypi_deepspeed()` waives it, explicitly and for this process only: nothing is
installed, no version is claimed, and without the call lightning-habana refuses as it does on a
Gaudi. Where the fork and PyPI's DeepSpeed differ, runtime/hpusim/README.md says so.
"""

from __future__ import annotations

import importlib
from typing import Final

from hpuprof.errors import UsageError

PROBE: Final = "_HPU_DEEPSPEED_AVAILABLE"
"""lightning-habana's module-level flag that gates its DeepSpeed strategy and precision plugin."""
PROBING_MODULES: Final = (
    "lightning_habana.pytorch.strategies.deepspeed",
    "lightning_habana.pytorch.plugins.deepspeed_precision",
)
"""The modules that define the flag (each its own `RequirementCache`)."""
IMPORTS_WHEN_ACCEPTED: Final = "lightning_habana.pytorch.plugins.deepspeed_precision"
"""The module that imports `deepspeed` at import time only when its flag holds
(`if _HPU_DEEPSPEED_AVAILABLE: import deepspeed`), then calls `deepspeed.init_inference`."""


def accept_pypi_deepspeed() -> str:
    """Let lightning-habana's DeepSpeed strategy and precision plugin use the installed DeepSpeed.

    Returns:
        The accepted DeepSpeed's version.

    Raises:
        UsageError: DeepSpeed or lightning-habana is not installed, or DeepSpeed's accelerator
            is not the HPU one (habana_frameworks not importable: no Gaudi, no emulator).
    """
    try:
        deepspeed = importlib.import_module("deepspeed")
        accelerator = importlib.import_module("deepspeed.accelerator").get_accelerator()
        modules = [importlib.import_module(name) for name in PROBING_MODULES]
    except ImportError as exc:
        raise UsageError(f"{exc}: pip install -e '.[clients,deepspeed]'") from exc
    if accelerator.device_name() != "hpu":
        raise UsageError(
            f"DeepSpeed selected its {accelerator.device_name()!r} accelerator, not 'hpu': "
            "import habana_frameworks.torch (or run under hpuprof record --emulate) first"
        )
    for module in modules:
        setattr(module, PROBE, True)
        if module.__name__ == IMPORTS_WHEN_ACCEPTED:
            module.deepspeed = deepspeed  # type: ignore[attr-defined]
    return str(deepspeed.__version__)
