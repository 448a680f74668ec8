"""The columnar trace model, its loaders and writers."""
