"""hpuprof's version, in a module of its own: what records it (run manifests, trace metadata)
imports this, not the package, whose lazy names lead back into capture."""

__version__ = "0.1.0"
