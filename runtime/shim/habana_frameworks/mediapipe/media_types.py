"""`habana_frameworks.mediapipe.media_types` (emulated): the enumerations' member names
resolve (to their qualified names), so pipe definitions import."""

from typing import Any


class _Names:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, member: str) -> str:
        if member.startswith("__"):
            raise AttributeError(member)
        return f"{self._name}.{member}"


decoderStage = _Names("decoderStage")
decoderType = _Names("decoderType")
dtype = _Names("dtype")
ftype = _Names("ftype")
imgtype = _Names("imgtype")
layout = _Names("layout")
randomCropType = _Names("randomCropType")
readerOutType = _Names("readerOutType")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return _Names(name)
