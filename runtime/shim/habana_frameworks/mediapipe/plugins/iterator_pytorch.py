"""`mediapipe.plugins.iterator_pytorch` (emulated): the media iterators raise when built."""

from hpusim.hpex import unavailable

from .. import WHY

HPUGenericPytorchIterator = unavailable(
    "habana_frameworks.mediapipe.plugins.iterator_pytorch.HPUGenericPytorchIterator", WHY
)
HPUResnetPytorchIterator = unavailable(
    "habana_frameworks.mediapipe.plugins.iterator_pytorch.HPUResnetPytorchIterator", WHY
)
HPUSsdPytorchIterator = unavailable(
    "habana_frameworks.mediapipe.plugins.iterator_pytorch.HPUSsdPytorchIterator", WHY
)
