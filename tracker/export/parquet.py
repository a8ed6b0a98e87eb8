"""Prices and price intervals as Parquet with explicit column types (pyarrow), so a notebook or
DuckDB reads numbers as numbers and times as UTC timestamps, not strings.

``prices``: the latest price of every offer (the ``prices`` command's rows). ``history``: the
stored USD price intervals of mapped GPUs (the rows the analysis reads), each with when its
price was first and last seen and ``end``, when it stops holding (the next collection attempt,
exclusive). The file's key-value metadata names the table, the tracker version and the time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tracker import __version__

TS = pa.timestamp("ms", tz="UTC")  # Parquet stores milliseconds at the coarsest
PRICES = pa.schema([
    ("provider", pa.string()), ("gpu", pa.string()), ("gpu_raw", pa.string()), ("gpu_count", pa.float64()),
    ("gpu_memory_gb", pa.float64()), ("kind", pa.string()), ("term_months", pa.int32()), ("region", pa.string()),
    ("country", pa.string()), ("sku", pa.string()), ("price_per_hour", pa.float64()),
    ("price_per_gpu_hour", pa.float64()), ("currency", pa.string()), ("available", pa.bool_()),
    ("available_count", pa.int32()), ("observed_at", TS), ("price_since", TS),
])
HISTORY = pa.schema([
    ("interval_id", pa.int64()), ("offer_id", pa.int64()), ("provider", pa.string()), ("gpu", pa.string()),
    ("kind", pa.string()), ("term_months", pa.int32()), ("region", pa.string()), ("sku", pa.string()),
    ("gpu_count", pa.float64()), ("price_per_gpu_hour_usd", pa.float64()), ("price_per_hour_usd", pa.float64()),
    ("available", pa.bool_()), ("first_seen", TS), ("last_seen", TS), ("end", TS),
])
TABLES = ("prices", "history")


def _metadata(table: str) -> dict[bytes, bytes]:
    return {b"gpu_price_tracker.table": table.encode(), b"gpu_price_tracker.version": __version__.encode(),
            b"gpu_price_tracker.created": datetime.now(UTC).isoformat().encode()}


def prices_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    columns = {f.name: [r[f.name] for r in rows] for f in PRICES}
    return pa.Table.from_pydict(columns, schema=PRICES.with_metadata(_metadata("prices")))


def history_table(intervals: pd.DataFrame) -> pa.Table:
    df = intervals.rename(columns={"price": "price_per_gpu_hour_usd", "price_per_hour": "price_per_hour_usd"})
    df = df[[f.name for f in HISTORY]]
    return pa.Table.from_pandas(df, schema=HISTORY.with_metadata(_metadata("history")), preserve_index=False)


def write(table: pa.Table, path: Path) -> int:
    pq.write_table(table, path)
    return table.num_rows
