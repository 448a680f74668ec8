"""Compare: run B against run A (`hpuprof.analysis.compare`): metrics, per-op and per-kernel
changes per step, regressions only beyond the steps' run-to-run noise (the report's rule)."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, html

from hpudash.data import DataStore, log
from hpudash.ids import Id
from hpudash.pages.common import Context, finding_card, message, notes, report_grid, run_picker
from hpudash.reportview import findings, section
from hpuprof.errors import HpuprofError

PATH = "/compare"
TITLE = "Compare"
NEEDS_RUN = False
OP_COLUMNS = (
    "name", "status", "regression", "a_calls", "b_calls", "a_host_ns", "b_host_ns", "diff_host_ns",
    "a_device_ns", "b_device_ns", "diff_device_ns",
)  # fmt: skip


def body(store: DataStore, a: Any, b: Any) -> list[Any]:
    """The comparison of B against A, or why there is none."""
    if not isinstance(a, str) or not isinstance(b, str) or not a or not b:
        return [message("Pick two runs.")]
    try:
        doc = store.comparison(a, b)
    except HpuprofError as error:
        return [message(str(error), "error")]
    except Exception as error:
        log.exception("comparison of %r and %r", a, b)
        return [message(f"These runs could not be compared ({type(error).__name__}); the server log has the details.", "error")]  # fmt: skip
    said = findings(doc)
    devices = [f for f in said if f.get("metric") == "same_device"]
    regressions = [f for f in said if f.get("metric") != "same_device"]
    over = f"{section(doc, 'compare', 'a_sampled') or 'no steps'} of A, {section(doc, 'compare', 'b_sampled') or 'no steps'} of B"  # fmt: skip
    return [
        *[finding_card(f) for f in devices],
        html.Div(
            f"B ({b}) against A ({a}), mean per step and rank over {over}.", className="small"
        ),
        *(
            [finding_card(f) for f in regressions]
            or [
                message("No regressions of B against A beyond the run-to-run noise of their steps.")
            ]
        ),
        *notes(doc, "compare"),
        html.H3("Per-step metrics (mean per step and rank)"),
        report_grid(Id.CMP_KPIS, doc, "compare_metrics", height=360, wide=("label",)),
        html.H3("Per-op changes (per step: host self time, device time counted once)"),
        report_grid(Id.CMP_OPS, doc, "compare_ops", OP_COLUMNS, height=420),
        html.H3("Per-kernel changes (device time per step)"),
        report_grid(Id.CMP_KERNELS, doc, "compare_kernels", height=360),
    ]


def layout(ctx: Context) -> Any:
    keys = [e.key for e in ctx.store.entries()]
    a = ctx.run or (keys[0] if keys else "")
    b = ctx.query.get("b") or next((k for k in keys if k != a), "")
    return html.Div(
        [
            html.H2("Compare runs"),
            html.Div(
                [
                    html.Span("A (baseline)"),
                    run_picker(ctx, Id.CMP_A, a),
                    html.Span("B"),
                    run_picker(ctx, Id.CMP_B, b),
                ],
                className="pickers",
            ),
            html.Div(body(ctx.store, a, b), id=Id.CMP_BODY),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output(Id.CMP_BODY, "children"),
        Input(Id.CMP_A, "value"),
        Input(Id.CMP_B, "value"),
        prevent_initial_call=True,
    )
    def update(a: Any, b: Any) -> list[Any]:
        return body(store, a, b)
