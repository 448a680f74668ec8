"""The built-in demo: an emulated Gaudi workload that shows every problem hpuprof finds."""
