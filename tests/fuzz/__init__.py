"""The loader fuzzer: mutants of real traces, each loaded in a forked child (`harness.py`)."""
