"""Merge a benchmark's figures into ``bench/results.json`` without touching other benchmarks' keys."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results.json"
#: Keys no script writes any more (renamed, or a baseline the targets retired: the first scrape
#: is judged against the schema's own inserts, not one unindexed table); ``record`` drops them.
RETIRED = frozenset({
    "cli_trends_s", "cli_trends_ratio", "api_load_cores",
    "ingest_ratio_vs_sqlite3_first", "ingest_ratio_vs_sqlite3_steady", "ingest_inserts_only_ratio_vs_sqlite3",
    "ingest_ratio_vs_psycopg_first", "ingest_ratio_vs_psycopg_steady", "ingest_inserts_only_ratio_vs_psycopg",
    "ingest_pg_first_s", "ingest_pg_steady_s", "ingest_pg_first_refresh_s", "ingest_pg_steady_refresh_s",
    "ingest_pg_first_inserts_only_s",
})


def record(figures: dict[str, Any], path: Path = RESULTS) -> dict[str, Any]:
    """Write ``figures`` over the same keys in ``path`` (other keys kept, ``RETIRED`` ones dropped);
    returns the whole object."""
    data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    data.update(figures)
    for key in RETIRED:
        data.pop(key, None)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data


def machine(prefix: str) -> dict[str, Any]:
    """The machine's cores and 1-minute load average under ``<prefix>_cores`` and
    ``<prefix>_load_average_1m``, recorded beside a script's figures: on a shared machine the
    wall figures move with the load, the same-run ratios much less."""
    return {f"{prefix}_cores": os.cpu_count() or 0, f"{prefix}_load_average_1m": round(os.getloadavg()[0], 2)}
