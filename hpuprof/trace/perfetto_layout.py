"""What hpuprof's Perfetto files hold beyond standard TrackEvent data, shared by writer and reader.

An hpuprof `.perfetto-trace` is an ordinary TrackEvent trace (one packet sequence, interned
names, categories and debug-annotation names) that ui.perfetto.dev opens natively, plus:

- a first packet carrying `chrome_events.metadata` entries (shown in the UI's "Info and
  stats" page): `hpuprof.schema` (int) and `hpuprof.trace` (JSON, `TraceBlob` below);
- on every slice and instant two debug annotations, both `legacy_json_value` so the UI shows
  them as JSON: `args` (the event's raw args bytes, verbatim) and `hpuprof` (the model's
  columns that the track and the packet do not already give, only where they differ from
  their default, plus `row`, the event's row index in `Trace.events`).
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any, Final

import orjson
import pandas as pd
import pyarrow as pa

from hpuprof.trace.schema import ARG_COLUMN_DEFAULTS, NO_ID

SEQUENCE_ID: Final = 1
META_SCHEMA: Final = "hpuprof.schema"
META_TRACE: Final = "hpuprof.trace"
ANN_ARGS: Final = "args"
ANN_ARGS_B64: Final = "hpuprof.args_base64"  # args bytes that are not UTF-8
ANN_COLUMNS: Final = "hpuprof"

# Columns carried by the track (rank, pid, tid), the packet (ts, dur, name, cat) or `args`.
TRACK_COLUMNS: Final = ("rank", "pid", "tid")
PACKET_COLUMNS: Final = ("name", "cat", "ts_ns", "dur_ns", "ph", "args")

COLUMN_DEFAULTS: Final[dict[str, Any]] = {"depth": 0, "kind": "other", **ARG_COLUMN_DEFAULTS}
"""Non-obvious defaults (and those of the columns read from args); otherwise text "", integers
NO_ID, booleans False."""


def default_for(column: str, dtype: Any) -> Any:
    """The value a column takes when the `hpuprof` annotation does not mention it."""
    if column in COLUMN_DEFAULTS:
        return COLUMN_DEFAULTS[column]
    if pd.api.types.is_bool_dtype(dtype):
        return False
    if pd.api.types.is_integer_dtype(dtype):
        return NO_ID
    if pd.api.types.is_float_dtype(dtype):
        return float("nan")
    return ""


def dumps(value: Any) -> bytes:
    """JSON bytes; falls back to the stdlib for integers beyond 64 bits."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def loads(text: str | bytes) -> Any:
    """Parse JSON exactly (the stdlib keeps integers beyond 64 bits; orjson makes them floats)."""
    return json.loads(text)


def table_to_text(frame: pd.DataFrame) -> str:
    """A DataFrame as base64 Arrow IPC: exact dtypes (categoricals included) survive."""
    sink = io.BytesIO()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return base64.b64encode(sink.getvalue()).decode("ascii")


def table_from_text(text: str) -> pd.DataFrame:
    """Inverse of `table_to_text`."""
    with pa.ipc.open_stream(base64.b64decode(text)) as reader:
        table = reader.read_all()
    frame: pd.DataFrame = table.to_pandas()
    return frame
