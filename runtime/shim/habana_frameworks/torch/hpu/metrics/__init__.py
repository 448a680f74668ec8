"""`habana_frameworks.torch.hpu.metrics` (emulated; gaudi.md section 1)."""

from hpusim.metrics import (
    InvalidMetricDumpFileFormat,
    InvalidMetricDumpTrigger,
    MetricDumpFormat,
    MetricNotFound,
    metric_global,
    metric_localcontext,
    metrics_dump,
)

__all__ = [
    "InvalidMetricDumpFileFormat",
    "InvalidMetricDumpTrigger",
    "MetricDumpFormat",
    "MetricNotFound",
    "metric_global",
    "metric_localcontext",
    "metrics_dump",
]
