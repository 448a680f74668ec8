"""`habana_frameworks.torch.utils` (emulated): `debug`, `internal`, `library_loader`,
`experimental`, `event_dispatcher`."""
