"""Stored price intervals as a pandas DataFrame, for what charts and exports them
(``gpu-tracker export``, the chart's markers, tests), and DataFrames as plain records.

``load_intervals`` returns the stored ``price_interval`` rows (quarantined observations never
reach that table) joined with their offer; ``end`` is when each price stops holding (the
"price at t" rule of ``db.spans.hold_end``: the provider's next collection attempt, at most one
collection interval after ``last_seen``). The history and trend answers do not read intervals
this way: they are computed in plain Python (``history``, ``trends``).

Prices are compared per GPU-hour in USD; intervals stored in another currency (no configured
rate) are left out rather than mixed in.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from db import reads, spans
from db.reader import Reader
from db.spans import epoch
from tracker.analysis.grid import (
    DEFAULT_TOLERANCE,
    EARLIEST,
    HOURS_PER_MONTH,
    LATEST,
    MAX_BUCKETS,
    MAX_GRID_ROWS,
    Filters,
    Resolution,
    Tolerance,
    check_dates,
    check_range,
    parse_span,
    parse_when,
    scrape_intervals,
    since_time,
    tolerance_lookup,
)
from tracker.kinds import DEFAULT_KINDS

#: Re-exported from ``grid`` (the pandas-free part), where every analysis module has found them.
__all__ = ["DEFAULT_KINDS", "DEFAULT_TOLERANCE", "EARLIEST", "HOURS_PER_MONTH", "LATEST", "MAX_BUCKETS", "MAX_GRID_ROWS",
           "Filters", "Resolution", "Tolerance", "check_dates", "check_range", "parse_span", "parse_when",
           "scrape_intervals", "since_time", "tolerance_lookup"]

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
    """Stored USD price intervals of mapped GPUs matching ``filters``, as a DataFrame.

    Columns: ``INTERVAL_COLUMNS`` plus ``end`` (when the price stops holding, exclusive: the
    provider's next collection attempt, at most one collection interval after ``last_seen``),
    and the integer fields of the bucket rule (``first_seen_s``, ``last_seen_s``, ``ends_at``,
    ``interval_s``: epoch seconds). ``price`` is USD per GPU-hour. ``tolerance`` overrides the providers'
    stored collection intervals. With ``since``/``until``, only intervals in effect at some
    point of that range are returned.
    """
    f = filters or Filters()
    labels = reads.Labels(reader)
    gpu_ids = labels.lookup("gpu", f.gpus) if f.gpus is not None else sorted(labels.names("gpu"))
    usd = labels.lookup("currency", ["USD"])
    stored = reads.provider_intervals(reader)
    seen_from = None
    if since is not None:
        # a price holds at most one collection interval past last_seen: the longest one
        # bounds the index range (exact filter below)
        longest = max([*stored.values(), spans.DEFAULT_INTERVAL_S])
        if tolerance is not None:
            tol = tolerance_lookup(tolerance)
            longest = max([longest, *(int(tol(n).total_seconds()) for n in labels.names("provider").values())])
        seen_from = epoch(since) - longest
    rows = reads.frame_intervals(reader, gpu_ids, labels.lookup("provider", f.providers) if f.providers else None,
                                 labels.lookup("kind", f.kinds) if f.kinds else None, usd[0] if usd else -1, f.regions,
                                 None if until is None else epoch(until), seen_from)
    df = pd.DataFrame(rows, columns=[*INTERVAL_COLUMNS, "ends_at", "provider_id"])
    df["first_seen_s"] = df["first_seen"].astype(np.int64)
    df["last_seen_s"] = df["last_seen"].astype(np.int64)
    df["ends_at"] = df["ends_at"].astype(float)
    df["available"] = df["available"].map(lambda v: None if v is None or pd.isna(v) else bool(v)).astype(object)
    if tolerance is None:
        df["interval_s"] = df["provider_id"].map(lambda p: stored.get(p, spans.DEFAULT_INTERVAL_S)).astype(np.int64)
    else:
        tol = tolerance_lookup(tolerance)
        per = {p: int(tol(p).total_seconds()) for p in df["provider"].unique()}
        df["interval_s"] = df["provider"].map(per).astype(np.int64)
    df["first_seen"] = pd.to_datetime(df["first_seen_s"], unit="s", utc=True)
    df["last_seen"] = pd.to_datetime(df["last_seen_s"], unit="s", utc=True)
    df["price"] = df["price"].astype(float)
    df["price_per_hour"] = df["price_per_hour"].astype(float)
    end = spans.hold_ends(df["last_seen_s"].tolist(), df["ends_at"].tolist(), df["interval_s"].tolist())
    df["end"] = pd.to_datetime(end, unit="s", utc=True)
    if since is not None:
        df = df[df["end"] > pd.Timestamp(since)]
    return df.sort_values(["gpu", "provider", "first_seen", "interval_id"]).reset_index(drop=True)


def utc(ts: datetime | pd.Timestamp | None) -> pd.Timestamp | None:
    if ts is None:
        return None
    t = pd.Timestamp(ts)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def py_value(v: Any) -> Any:
    """A DataFrame cell as a plain Python value for JSON/CSV: NaN/NaT -> None, Timestamp -> datetime.

    The common cases come first and cheaply (a year of history is tens of thousands of cells):
    text is itself, a float (``np.float64`` is one) is checked with ``math.isnan``."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, pd.Timestamp):
        return None if pd.isna(v) else v.to_pydatetime()
    if isinstance(v, float):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.floating):
        return None if np.isnan(v) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts (``py_value`` applied), for ``emit`` and the API."""
    return [{k: py_value(v) for k, v in row.items()} for row in df.to_dict(orient="records")]
