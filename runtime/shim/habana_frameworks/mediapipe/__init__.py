"""`habana_frameworks.mediapipe` (emulated): the media pipe decodes and augments images on the
Gaudi's media engines, which the emulated card does not have. The package and its names import
(clients such as lightning-habana import and subclass them at import time); building or running
a pipe raises NotImplementedError naming the emulator."""

WHY = "the media pipe runs on the Gaudi's media decoder engines"
