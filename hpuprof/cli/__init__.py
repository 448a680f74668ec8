"""The `hpuprof` command line: a registry of small commands behind one `main(argv) -> int`."""
