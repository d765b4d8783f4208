"""Reading evaluation data from local files (JSONL, CSV) with row-level error locations."""

from calipers.datasets._files import read_records
from calipers.datasets._local import benchmark_dir, benchmark_file, data_root

__all__ = ["benchmark_dir", "benchmark_file", "data_root", "read_records"]
