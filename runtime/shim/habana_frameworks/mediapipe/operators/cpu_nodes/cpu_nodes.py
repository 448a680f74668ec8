"""`mediapipe.operators.cpu_nodes.cpu_nodes` (emulated): `media_function` can be subclassed."""

from typing import Any


class media_function:
    def __init__(self, params: Any = None) -> None:
        self.params = params
