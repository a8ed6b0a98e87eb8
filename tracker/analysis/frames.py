"""Stored price intervals as a pandas DataFrame (the Parquet export), and DataFrames as plain
records (the CLI's and the MCP server's tables).

Prices are compared per GPU-hour in USD; intervals stored in another currency (no configured
rate) are left out rather than mixed in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from db import reads, spans
from db.reader import Reader
from db.spans import epoch
from tracker.analysis.grid import Filters, Tolerance
from tracker.analysis.history import Scope

INTERVAL_COLUMNS = [
    "interval_id", "offer_id", "provider", "gpu", "kind", "term_months", "region", "sku", "gpu_count",
    "price", "price_per_hour", "available", "first_seen", "last_seen",
]


def load_intervals(
    reader: Reader,
    filters: Filters | None = None,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    tolerance: Tolerance | None = None,
) -> pd.DataFrame:
    """Stored USD price intervals of mapped GPUs matching ``filters``: ``INTERVAL_COLUMNS``
    (``price`` is USD per GPU-hour) plus ``end``, when the price stops holding (``db.spans.hold_end``).
    With ``since``/``until``, only intervals in effect at some point of that range.
    ``tolerance`` overrides the providers' stored collection intervals."""
    s = Scope(reader, filters or Filters(), tolerance)
    # a price holds at most one collection interval past last_seen: the longest bounds the read
    seen_from = None if since is None else epoch(since) - s.longest
    rows = reads.named_intervals(reader, reads.FRAME_COLUMNS, s.gpu_ids, s.provider_ids, s.kind_ids, s.usd,
                                 regions=s.regions, since=seen_from, until=None if until is None else epoch(until))
    df = pd.DataFrame(rows, columns=[*INTERVAL_COLUMNS, "ends_at", "provider_id"])
    end = spans.hold_ends(df["last_seen"].tolist(), df["ends_at"].tolist(), [s.interval_s(p) for p in df["provider_id"]])
    df["end"] = pd.to_datetime(end, unit="s", utc=True)
    for column in ("first_seen", "last_seen"):
        df[column] = pd.to_datetime(df[column].astype(np.int64), unit="s", utc=True)
    df["price"] = df["price"].astype(float)
    df["price_per_hour"] = df["price_per_hour"].astype(float)
    df["available"] = df["available"].map(lambda v: None if v is None or pd.isna(v) else bool(v)).astype(object)
    if since is not None:
        df = df[df["end"] > pd.Timestamp(since)]
    df = df.drop(columns=["ends_at", "provider_id"])
    return df.sort_values(["gpu", "provider", "first_seen", "interval_id"]).reset_index(drop=True)


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts for ``emit`` and the API (``to_dict`` makes numpy scalars Python's):
    NaN and NaT become None, Timestamps datetimes."""
    return [{k: _plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def _plain(v: Any) -> Any:
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    return None if pd.api.types.is_scalar(v) and pd.isna(v) else v
