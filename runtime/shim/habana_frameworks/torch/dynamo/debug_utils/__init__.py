"""`habana_frameworks.torch.dynamo.debug_utils` (emulated)."""
