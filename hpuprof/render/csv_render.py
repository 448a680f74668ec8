"""CSV renderer: one CSV per table (`tables(report)`); `render` joins them with headers."""

from __future__ import annotations

import csv
import io

from hpuprof.analysis.report import Report
from hpuprof.render.tables import columns_of, report_tables


class CsvRenderer:
    """One CSV document per table; the CLI writes them into a directory."""

    extension = ".csv"

    def tables(self, report: Report) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, rows in report_tables(report).items():
            if not rows:
                continue
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=columns_of(rows), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
            out[name] = buf.getvalue()
        return out

    def render(self, report: Report) -> str:
        return "\n".join(f"# {name}.csv\n{text}" for name, text in self.tables(report).items())
