"""`habana_frameworks.autoload` (emulated): set once `habana_frameworks.torch` is imported."""

is_loaded = False
