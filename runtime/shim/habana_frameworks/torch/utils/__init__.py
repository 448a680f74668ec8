"""`habana_frameworks.torch.utils` (emulated): `event_dispatcher` here; `experimental` is added
by the dynamic-shape tooling work."""
