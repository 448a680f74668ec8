"""`habana_frameworks.mediapipe.mediapipe` (emulated): `MediaPipe` can be subclassed; building
a pipe raises NotImplementedError naming the emulator."""

from typing import Any

from . import WHY


class MediaPipe:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"habana_frameworks.mediapipe.MediaPipe is not available under the hpusim emulator: {WHY}"
        )
