"""Every component id of the app, in one place, so layouts and callbacks cannot drift apart."""

from __future__ import annotations

from enum import StrEnum


class Id(StrEnum):
    """Component ids. Values are the DOM ids the browser tests look for."""

    URL = "url"
    NAV = "nav"
    PAGE = "page-content"
    RUN_SELECT = "run-select"
    SERVER_ERROR = "server-error"
    PAGE_KEY = "page-key"

    RUNS_GRID = "runs-grid"
    RUNS_REFRESH = "runs-refresh"
    RUNS_COUNT = "runs-count"
    RUNS_INTERVAL = "runs-interval"

    OVERVIEW_FINDINGS = "overview-findings"
    OVERVIEW_KPIS = "overview-kpis"
    OVERVIEW_STEPS = "overview-steps"
    OVERVIEW_RATIO = "overview-ratio"
    OVERVIEW_DOWNLOAD_TRACE = "overview-download-trace"
    OVERVIEW_DOWNLOAD_REPORT = "overview-download-report"

    TIMELINE_GRAPH = "timeline-graph"
    TIMELINE_STATUS = "timeline-status"
    TIMELINE_DETAILS = "timeline-details"
    TIMELINE_RANKS = "timeline-ranks"
    TIMELINE_GROUPS = "timeline-groups"
    TIMELINE_OPTIONS = "timeline-options"
    TIMELINE_WINDOW = "timeline-window"
    TIMELINE_RANGE = "timeline-range"
    TIMELINE_PERFETTO = "timeline-perfetto"

    OPS_SEARCH = "ops-search"
    OPS_GRID = "ops-grid"

    DYN_KPIS = "dyn-kpis"
    DYN_COMPILES = "dyn-compiles"
    DYN_CAUSES = "dyn-causes"
    DYN_SHAPES = "dyn-shapes"
    DYN_BUCKETING = "dyn-bucketing"

    PREC_DTYPE = "prec-dtype"
    PREC_TABLES = "prec-tables"

    CMP_A = "compare-a"
    CMP_B = "compare-b"
    CMP_KPIS = "compare-kpis"
    CMP_OPS = "compare-ops"

    RANKS_GRAPH = "ranks-graph"
    RANKS_STRAGGLERS = "ranks-stragglers"
