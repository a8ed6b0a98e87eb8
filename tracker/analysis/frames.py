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
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection, Engine

from db import labels, rollups, spans
from db.engine import connected
from db.types import epoch
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

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

#: Re-exported from ``grid`` (the pandas-free part), where every analysis module has found them.
__all__ = ["DEFAULT_KINDS", "DEFAULT_TOLERANCE", "EARLIEST", "HOURS_PER_MONTH", "LATEST", "MAX_BUCKETS", "MAX_GRID_ROWS",
           "Filters", "Resolution", "Tolerance", "check_dates", "check_range", "parse_span", "parse_when",
           "scrape_intervals", "since_time", "tolerance_lookup"]

INTERVAL_COLUMNS = [
    "interval_id", "offer_id", "provider", "gpu", "kind", "term_months", "region", "sku", "gpu_count",
    "price", "price_per_hour", "available", "first_seen", "last_seen",
]


def load_intervals(
    source: Engine | Connection | Session,
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
    with connected(source) as conn:
        gpu_ids = labels.lookup(conn, "gpu", f.gpus) if f.gpus is not None else sorted(labels.names(conn, "gpu"))
        sql = (
            "SELECT i.id, i.offer_id, lp.name, lg.name, lk.name, o.term_months, o.region, o.sku, o.gpu_count, "
            "i.price_per_gpu_hour, i.price_per_hour, i.available, i.first_seen, i.last_seen, i.ends_at, "
            "i.provider_id FROM price_interval i JOIN offer o ON o.id = i.offer_id JOIN label lp ON lp.id = i.provider_id "
            "JOIN label lg ON lg.id = i.gpu_id JOIN label lk ON lk.id = i.kind_id "
            "WHERE i.gpu_id IN :gpus AND i.currency_id = :usd"
        )
        params: dict[str, Any] = {"gpus": gpu_ids or [-1], "usd": labels.usd_id(conn)}
        binds = [bindparam("gpus", expanding=True)]
        sql += label_terms(conn, f, "i", params, binds)
        if f.regions:
            sql += " AND o.region IN :regions"
            params["regions"] = list(f.regions)
            binds.append(bindparam("regions", expanding=True))
        if until is not None:
            sql += " AND i.first_seen <= :until"
            params["until"] = epoch(until)
        stored = rollups.provider_intervals(conn)
        if since is not None:
            # a price holds at most one collection interval past last_seen: the longest one
            # bounds the index range (exact filter below)
            longest = max([*stored.values(), rollups.DEFAULT_INTERVAL_S])
            if tolerance is not None:
                tol = tolerance_lookup(tolerance)
                longest = max([longest, *(int(tol(n).total_seconds()) for n in labels.names(conn, "provider").values())])
            sql += " AND i.last_seen >= :since"
            params["since"] = epoch(since) - longest
        rows = rollups.fetch_tuples(conn, text(sql).bindparams(*binds), params)
    df = pd.DataFrame(rows, columns=[*INTERVAL_COLUMNS, "ends_at", "provider_id"])
    df["first_seen_s"] = df["first_seen"].astype(np.int64)
    df["last_seen_s"] = df["last_seen"].astype(np.int64)
    df["ends_at"] = df["ends_at"].astype(float)
    df["available"] = df["available"].map(lambda v: None if v is None or pd.isna(v) else bool(v)).astype(object)
    if tolerance is None:
        df["interval_s"] = df["provider_id"].map(lambda p: stored.get(p, rollups.DEFAULT_INTERVAL_S)).astype(np.int64)
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


def label_terms(conn: Any, f: Filters, alias: str, params: dict[str, Any], binds: list[Any]) -> str:
    """``AND`` terms for ``f``'s providers and kinds on a table ``alias`` with ``provider_id`` and
    ``kind_id`` columns (intervals and roll-ups alike); adds their ids to ``params`` and ``binds``."""
    sql = ""
    if f.providers:
        sql += f" AND {alias}.provider_id IN :providers"
        params["providers"] = labels.lookup(conn, "provider", f.providers) or [-1]
        binds.append(bindparam("providers", expanding=True))
    if f.kinds:
        sql += f" AND {alias}.kind_id IN :kinds"
        params["kinds"] = labels.lookup(conn, "kind", f.kinds) or [-1]
        binds.append(bindparam("kinds", expanding=True))
    return sql


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
