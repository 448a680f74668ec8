"""`habana_frameworks.torch.utils.profiler` (emulated): the host profiler API of the bridge's
`_profiler_C` (utils/profiler/csrc/bindings.cpp), which sends commands to the Synapse API
logger. The emulator has no Synapse logger: the commands are kept in `commands` (in order) and
change nothing else; the emulated run's Synapse lanes come from `hpuprof record` instead."""

commands: list[str] = []
"""The synapse_logger commands sent so far, as the bridge's bindings send them."""


def _setup_profiler() -> None:
    commands.extend(["stop_data_capture", "no_eager_flush", "use_pid_suffix", "optimize_trace"])


def _start_profiler() -> None:
    commands.append("restart")


def _stop_profiler() -> None:
    commands.append("disable_mask")
