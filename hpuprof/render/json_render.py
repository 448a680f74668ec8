"""JSON renderer: the report's schema-versioned dict (`Report.to_dict()`), stable key order."""

from __future__ import annotations

import orjson

from hpuprof.analysis.report import Report


class JsonRenderer:
    """Render a Report as indented JSON bytes."""

    extension = ".json"

    def render(self, report: Report) -> bytes:
        return (
            orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
            + b"\n"
        )
