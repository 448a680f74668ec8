"""`habana_frameworks.torch.utils.event_dispatcher` (emulated): the metrics event bus."""

from hpusim.metrics import EventDispatcher, EventId

__all__ = ["EventDispatcher", "EventId"]
