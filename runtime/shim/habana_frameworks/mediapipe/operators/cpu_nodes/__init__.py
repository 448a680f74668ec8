"""`habana_frameworks.mediapipe.operators.cpu_nodes` (emulated)."""
