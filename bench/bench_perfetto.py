"""Perfetto writer and reader speed, in slices/s, beside a raw TraceProtoBuilder baseline.

The baseline is the perfetto docs' minimal writer (the ~337 k slices/s anchor in
../shared/reference/performance.md): one BEGIN and one END packet per slice with a plain name
on one track, built with `TraceProtoBuilder` and serialized. It is measured in the same run, so
the ratio is what to compare across machines. Our writer does more per slice (interned names
and categories, lanes and overlap tracks, flows, two JSON debug annotations for a lossless
round trip); our reader parses and rebuilds the exact columnar Trace.

    python bench/bench_perfetto.py [--events 200000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_synthetic_trace import generate

from hpuprof.trace.kineto_json import read_kineto_json
from hpuprof.trace.perfetto_read import load_perfetto
from hpuprof.trace.perfetto_write import write_perfetto


def raw_builder_loop(slices: int, path: Path) -> float:
    """Seconds to write `slices` BEGIN/END pairs with the bare TraceProtoBuilder."""
    from perfetto.trace_builder.proto_builder import TraceProtoBuilder

    started = time.perf_counter()
    builder = TraceProtoBuilder()
    descriptor = builder.add_packet()
    descriptor.trusted_packet_sequence_id = 1
    descriptor.track_descriptor.uuid = 1
    descriptor.track_descriptor.name = "lane"
    for i in range(slices):
        begin = builder.add_packet()
        begin.timestamp = i * 10
        begin.trusted_packet_sequence_id = 1
        begin.track_event.type = 1
        begin.track_event.track_uuid = 1
        begin.track_event.name = "aten::addmm"
        end = builder.add_packet()
        end.timestamp = i * 10 + 5
        end.trusted_packet_sequence_id = 1
        end.track_event.type = 2
        end.track_event.track_uuid = 1
    path.write_bytes(builder.serialize())
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "synthetic.json"
        generate(source, options.events)
        trace = read_kineto_json(source)
        slices = int((trace.events["ph"] == "X").sum())
        rows = len(trace.events)

        out = Path(tmp) / "ours.perfetto-trace"
        started = time.perf_counter()
        write_perfetto(trace, out)
        write_s = time.perf_counter() - started
        started = time.perf_counter()
        back = load_perfetto(out)
        read_s = time.perf_counter() - started
        assert len(back.events) == rows

        baseline = raw_builder_loop(slices, Path(tmp) / "raw.pftrace")
        raw_size = (Path(tmp) / "raw.pftrace").stat().st_size
        our_size = out.stat().st_size

    base_rate = slices / baseline
    print(f"trace: {rows:,} events ({slices:,} slices), Perfetto file {our_size / 1e6:.1f} MB")
    print(f"baseline raw TraceProtoBuilder loop: {base_rate:,.0f} slices/s "
          f"({raw_size / slices:.0f} bytes/slice)")  # fmt: skip
    print(f"hpuprof write_perfetto: {slices / write_s:,.0f} slices/s "
          f"({our_size / slices:.0f} bytes/slice), {slices / write_s / base_rate:.2f}x baseline")  # fmt: skip
    print(f"hpuprof load_perfetto:  {slices / read_s:,.0f} slices/s, "
          f"{slices / read_s / base_rate:.2f}x the baseline writer")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
