"""Merge a benchmark's figures into ``bench/results.json`` without touching other benchmarks' keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results.json"


def record(figures: dict[str, Any], path: Path = RESULTS) -> dict[str, Any]:
    """Write ``figures`` over the same keys in ``path`` (other keys kept); returns the whole object."""
    data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    data.update(figures)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data
