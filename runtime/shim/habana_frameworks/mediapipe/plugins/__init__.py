"""`habana_frameworks.mediapipe.plugins` (emulated)."""
