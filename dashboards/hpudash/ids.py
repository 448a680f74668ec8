"""Every component id of the app, in one place, so layouts and callbacks cannot drift apart."""

from __future__ import annotations

from enum import StrEnum


class Id(StrEnum):
    """Component ids. Values are the DOM ids the browser tests (and assets/*.js) look for; a
    component repeated on a page takes `item(key)` of its kind's id."""

    def item(self, key: int | str) -> str:
        """The id of one of several components of this kind: `<id>-<key>`."""
        return f"{self.value}-{key}"

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
    RUNS_PRELOAD = "runs-preload-graph"
    RUNS_REFRESHED = "runs-refreshed"

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
    TIMELINE_PERFETTO_STATUS = "perfetto-status"
    TIMELINE_DETAILS_TABLE = "timeline-details-table"
    TIMELINE_RANGE_GRID = "timeline-range-grid"
    TIMELINE_SEARCH = "timeline-search"
    TIMELINE_SEARCH_PREV = "timeline-search-prev"
    TIMELINE_SEARCH_NEXT = "timeline-search-next"
    TIMELINE_SEARCH_STATUS = "timeline-search-status"
    TIMELINE_FOCUS = "timeline-focus"
    TIMELINE_GOTO = "timeline-goto"
    TIMELINE_GOTO_TARGET = "timeline-goto-target"
    TIMELINE_PIN = "timeline-pin"
    TIMELINE_PINNED = "timeline-pinned"
    TIMELINE_PIN_THIS = "timeline-pin-this"
    TIMELINE_PIN_TARGET = "timeline-pin-target"

    OPS_SEARCH = "ops-search"
    OPS_GRID = "ops-grid"
    OPS_KERNELS = "ops-kernels"
    OPS_FACTS = "ops-facts"
    OPS_BY_RANK = "ops-by-rank"

    DYN_KPIS = "dyn-kpis"
    DYN_COMPILES = "dyn-compiles"
    DYN_CAUSES = "dyn-causes"
    DYN_SHAPES = "dyn-shapes"
    DYN_BUCKETING = "dyn-bucketing"
    DYN_GRAPHS = "dyn-graphs"
    DYN_SHAPE_TABLE = "dyn-shape-table"
    DYN_DYNAMIC_OPS = "dyn-dynamic-ops"

    PREC_DTYPE = "prec-dtype"
    PREC_TABLES = "prec-tables"
    PREC_TABLE = "prec-table"
    PREC_FACTS = "prec-facts"

    CMP_A = "compare-a"
    CMP_B = "compare-b"
    CMP_KPIS = "compare-kpis"
    CMP_OPS = "compare-ops"
    CMP_KERNELS = "compare-kernels"
    CMP_BODY = "compare-body"

    RANKS_GRAPH = "ranks-graph"
    RANKS_STRAGGLERS = "ranks-stragglers"
    RANKS_FACTS = "ranks-facts"
    RANKS_SPLIT = "ranks-split"
    RANKS_TABLE = "ranks-table"
    RANKS_STEPS = "ranks-steps"

    MEMORY_GRAPH = "memory-graph"
    MEMORY_FACTS = "memory-facts"
    MEMORY_DEVICES = "memory-devices"
    MEMORY_TOP_OPS = "memory-top-ops"

    NODES_GRID = "nodes-grid"
    NODES_FACTS = "nodes-facts"
    NODES_ABSENT = "nodes-absent"
    NODES_FINDINGS = "nodes-findings"
