from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def gsm8k_test() -> Path:
    data = Path(os.environ.get("CALIPERS_DATA", "/work/shared/data")) / "gsm8k" / "test.jsonl"
    if not data.is_file():
        pytest.skip("GSM8K's test.jsonl is not in CALIPERS_DATA")
    return data
