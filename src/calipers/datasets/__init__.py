"""Reading evaluation data from local files (JSONL, CSV) with row-level error locations."""

from calipers.datasets._files import read_records

__all__ = ["read_records"]
