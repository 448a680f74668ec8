"""`habana_frameworks.mediapipe.operators` (emulated)."""
