"""Evaluation data: local files (JSONL, CSV, a benchmark's original files in a data directory)
with row-level error locations, and the Hugging Face hub (``datasets``, an optional extra)."""

from calipers.datasets._files import read_records
from calipers.datasets._hub import (
    DATA_SOURCE_KEY,
    HubRows,
    HubSource,
    data_source,
    hub_error,
    load_hub_rows,
)
from calipers.datasets._local import benchmark_dir, benchmark_file, data_root

__all__ = [
    "DATA_SOURCE_KEY",
    "HubRows",
    "HubSource",
    "benchmark_dir",
    "benchmark_file",
    "data_root",
    "data_source",
    "hub_error",
    "load_hub_rows",
    "read_records",
]
