"""`habana_frameworks.torch.hpex.hmp` (emulated legacy Habana Mixed Precision): `convert`,
`disable_casts`. See hpusim.hmp for the rules and what is unverified."""

from hpusim.hmp import convert, disable_casts, is_enabled

__all__ = ["convert", "disable_casts", "is_enabled"]
