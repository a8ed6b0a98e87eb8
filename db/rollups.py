"""Bucket semantics and the hourly/daily roll-ups built on them.

The one rule for which buckets an interval counts in (``spans``), used both by the roll-ups
and by the raw-interval path of the analysis, so the two always agree:

* A bucket's value is taken over the prices **observed** during the bucket: an interval
  counts in every bucket from the one holding ``first_seen`` to the one holding
  ``last_seen`` (every collection in between saw it).
* For buckets **finer** than the provider's collection interval (hourly buckets of a daily
  provider), a price also holds after its last observation until the provider's next
  collection attempt (``ends_at``), never beyond it, never longer than one collection
  interval after ``last_seen`` (an attempt that never happened is unknown, not "unchanged"),
  and never into a bucket where a newer observation of the same offer exists.
* Buckets at least as long as the collection interval see observations only, so a price last
  seen at 23:35 is not carried into the next day.

Roll-ups: ``rollup_hour`` and ``rollup_day`` hold, per (gpu, provider, kind, bucket), the
min, median and max USD price per GPU-hour over the intervals counting in the bucket and the
number of distinct offers among them. They cover USD intervals of mapped GPUs (what the
analysis reads). The store refreshes a provider's buckets around each collection
(``refresh``), and ``rebuild`` recomputes everything (after an import or a migration).
Because a roll-up row is one provider's, each provider's refresh is independent of the
others and its cost depends on that collection's size, not on the history's length.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from db import labels

HOUR = 3600
DAY = 86_400
WEEK = 7 * DAY
#: Roll-up tables by bucket length.
TABLES = {HOUR: "rollup_hour", DAY: "rollup_day"}
#: Collection interval assumed for a provider that never recorded one.
DEFAULT_INTERVAL_S = 3600
#: Rebuilds work through time in windows of this length (bounded memory).
REBUILD_WINDOW = 31 * DAY
_NEVER = np.iinfo(np.int64).max // 4

RAW_COLUMNS = ["interval_id", "offer_id", "provider_id", "gpu_id", "kind_id", "price",
               "first_seen", "last_seen", "ends_at"]


def fetch_tuples(conn: Connection, statement: Any, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows as the driver's plain tuples (no per-row ``Row`` objects): what pandas reads fastest.

    For statements whose columns need no type processing (integers, floats, strings)."""
    result = conn.execute(statement, params or {})
    try:
        return list(result.cursor.fetchall()) if result.cursor is not None else []
    finally:
        result.close()


def origin(step: int) -> int:
    """Buckets start at the epoch; weeks on Monday 1970-01-05."""
    return 4 * DAY if step == WEEK else 0


def floor(t: int, step: int) -> int:
    o = origin(step)
    return o + ((t - o) // step) * step


def hold_end(last_seen: np.ndarray, ends_at: np.ndarray, interval_s: np.ndarray) -> np.ndarray:
    """Exclusive end of the time a price is taken to hold: the next collection attempt, at
    most one collection interval after the last observation (``ends_at`` NaN: not yet)."""
    ends = np.where(np.isnan(ends_at), _NEVER, np.nan_to_num(ends_at, nan=0)).astype(np.int64)
    return np.minimum(ends, last_seen + interval_s)


def spans(df: pd.DataFrame, step: int, first_col: str = "first_seen", last_col: str = "last_seen") -> tuple[np.ndarray, np.ndarray]:
    """First and last bucket index (bucket start = origin + index * step) each interval counts in.

    ``df`` has integer ``first_seen``, ``last_seen``, ``interval_s`` and float ``ends_at``,
    ``next_seen`` (the offer's next observation after this interval; NaN when none).
    """
    o = origin(step)
    first_seen = df[first_col].to_numpy(dtype=np.int64)
    last_seen = df[last_col].to_numpy(dtype=np.int64)
    interval_s = df["interval_s"].to_numpy(dtype=np.int64)
    first = (first_seen - o) // step
    observed = (last_seen - o) // step
    end = hold_end(last_seen, df["ends_at"].to_numpy(dtype=float), interval_s)
    held = (end - 1 - o) // step
    nxt = df["next_seen"].to_numpy(dtype=float)
    next_bucket = np.where(np.isnan(nxt), _NEVER, (np.nan_to_num(nxt, nan=0).astype(np.int64) - o) // step)
    held = np.where((held > observed) & (next_bucket == held), held - 1, held)
    fine = step < interval_s
    last = np.where(fine, np.maximum(held, observed), observed)
    return first, last


def with_next_seen(df: pd.DataFrame, first_col: str = "first_seen") -> pd.DataFrame:
    """Add ``next_seen``: the first observation (epoch seconds) of the same offer's next
    interval, NaN if none is loaded."""
    if df.empty:
        return df.assign(next_seen=pd.Series(dtype=float))
    out = df.sort_values(["offer_id", first_col, "interval_id"])
    out["next_seen"] = out.groupby("offer_id")[first_col].shift(-1).astype(float)
    return out


def expand(df: pd.DataFrame, step: int, lo: int, hi: int, max_rows: int | None = None,
           first_col: str = "first_seen", last_col: str = "last_seen") -> pd.DataFrame:
    """One row per (interval, bucket) it counts in, for buckets starting in ``[floor(lo), floor(hi)]``.

    Adds ``bucket`` (epoch seconds of the bucket start). ``df`` must carry ``next_seen``.
    Raises ``OverflowError`` when more than ``max_rows`` rows would be produced.
    """
    if df.empty:
        return df.assign(bucket=pd.Series(dtype=np.int64))
    o = origin(step)
    first, last = spans(df, step, first_col, last_col)
    first = np.maximum(first, (lo - o) // step)
    last = np.minimum(last, (hi - o) // step)
    counts = np.where(last >= first, last - first + 1, 0)
    total = int(counts.sum())
    if max_rows is not None and total > max_rows:
        raise OverflowError(total)
    idx = np.repeat(np.arange(len(df)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    out = df.iloc[idx].reset_index(drop=True)
    out["bucket"] = o + (np.repeat(first, counts) + offsets) * step
    return out


def summarise(expanded: pd.DataFrame) -> pd.DataFrame:
    """Roll-up rows (gpu_id, bucket, provider_id, kind_id, min, median, max, offers)."""
    cols = ["gpu_id", "bucket", "provider_id", "kind_id", "min", "median", "max", "offers"]
    if expanded.empty:
        return pd.DataFrame(columns=cols)
    g = expanded.groupby(["gpu_id", "bucket", "provider_id", "kind_id"], sort=True)
    out = g["price"].agg(["min", "median", "max"])
    out["offers"] = g["offer_id"].nunique()
    return out.reset_index()[cols]


def provider_intervals(conn: Connection) -> dict[int, int]:
    """Collection interval in seconds by provider label id (default one hour)."""
    rows = conn.execute(text(
        "SELECT l.id, p.interval_s FROM provider p JOIN label l ON l.space = 'provider' AND l.name = p.name"
    )).all()
    return {pid: int(s) if s else DEFAULT_INTERVAL_S for pid, s in rows}


def gpu_ids(conn: Connection) -> list[int]:
    return sorted(labels.names(conn, "gpu"))


def load_raw(
    conn: Connection,
    *,
    gpu_ids: Iterable[int],
    since: int | None = None,
    until: int | None = None,
    provider_ids: Iterable[int] | None = None,
    kind_ids: Iterable[int] | None = None,
    usd_only: bool = True,
    slack: int = 0,
) -> pd.DataFrame:
    """USD intervals of the given GPUs that may count in ``[since, until]``, with ``interval_s``
    and ``next_seen``. ``slack`` widens the lower bound (holds reach past ``last_seen``)."""
    gpus = list(gpu_ids)
    if not gpus:
        return pd.DataFrame(columns=[*RAW_COLUMNS, "interval_s", "next_seen"])
    sql = ("SELECT id, offer_id, provider_id, gpu_id, kind_id, price_per_gpu_hour, first_seen, last_seen, ends_at "
           "FROM price_interval WHERE gpu_id IN :gpus")
    params: dict[str, object] = {"gpus": gpus}
    binds = [bindparam("gpus", expanding=True)]
    if since is not None:
        sql += " AND last_seen >= :since"
        params["since"] = since - slack
    if until is not None:
        sql += " AND first_seen <= :until"
        params["until"] = until
    if provider_ids is not None:
        sql += " AND provider_id IN :providers"
        params["providers"] = list(provider_ids) or [-1]
        binds.append(bindparam("providers", expanding=True))
    if kind_ids is not None:
        sql += " AND kind_id IN :kinds"
        params["kinds"] = list(kind_ids) or [-1]
        binds.append(bindparam("kinds", expanding=True))
    if usd_only:
        usd = labels.lookup(conn, "currency", ["USD"])
        sql += " AND currency_id = :usd"
        params["usd"] = usd[0] if usd else -1
    rows = fetch_tuples(conn, text(sql).bindparams(*binds), params)
    return _typed(conn, pd.DataFrame(rows, columns=RAW_COLUMNS))


def _typed(conn: Connection, df: pd.DataFrame) -> pd.DataFrame:
    """Raw interval rows with numeric dtypes, ``interval_s`` and ``next_seen``."""
    df["ends_at"] = df["ends_at"].astype(float)
    df["price"] = df["price"].astype(float)
    for c in ("first_seen", "last_seen", "interval_id", "offer_id", "provider_id", "gpu_id", "kind_id"):
        df[c] = df[c].astype(np.int64)
    intervals = provider_intervals(conn)
    df["interval_s"] = df["provider_id"].map(lambda p: intervals.get(p, DEFAULT_INTERVAL_S)).astype(np.int64)
    return with_next_seen(df)


def _placeholders(conn: Connection, n: int) -> str:
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    return ", ".join([mark] * n)


def _write(conn: Connection, table: str, rows: pd.DataFrame) -> int:
    """Insert roll-up rows with one driver-level ``executemany`` (no per-row SQLAlchemy work)."""
    if rows.empty:
        return 0
    values = list(zip(rows["gpu_id"].astype(int).tolist(), rows["bucket"].astype(int).tolist(),
                      rows["provider_id"].astype(int).tolist(), rows["kind_id"].astype(int).tolist(),
                      rows["min"].astype(float).tolist(), rows["median"].astype(float).tolist(),
                      rows["max"].astype(float).tolist(), rows["offers"].astype(int).tolist(), strict=True))
    conn.exec_driver_sql(
        f"INSERT INTO {table} (gpu_id, bucket, provider_id, kind_id, min, median, max, offers) "
        f"VALUES ({_placeholders(conn, 8)})", values)
    return len(values)


def _recompute(conn: Connection, raw: pd.DataFrame, provider_id: int, step: int, b_lo: int, b_hi: int) -> int:
    """Replace ``provider_id``'s roll-ups of ``step`` for buckets ``[b_lo, b_hi]`` by what ``raw`` gives."""
    rows = summarise(expand(raw, step, b_lo, b_hi))
    conn.execute(text(f"DELETE FROM {TABLES[step]} WHERE provider_id = :p AND bucket >= :lo AND bucket <= :hi"),
                 {"lo": b_lo, "hi": b_hi, "p": provider_id})
    return _write(conn, TABLES[step], rows)


def refresh(conn: Connection, provider_id: int, lo: int, hi: int, intervals: dict[int, int] | None = None) -> int:
    """Recompute ``provider_id``'s hourly and daily roll-ups for the buckets holding ``[lo, hi]``
    (never before the raw-retention horizon: those buckets are all that is left of them).

    Returns the number of roll-up rows written."""
    intervals = intervals if intervals is not None else provider_intervals(conn)
    interval_s = intervals.get(provider_id, DEFAULT_INTERVAL_S)
    lo = max(lo, raw_horizon(conn))
    gpus = gpu_ids(conn)
    written = 0
    for step in TABLES:
        b_lo, b_hi = floor(lo, step), floor(hi, step)
        if b_hi < b_lo:
            continue
        raw = load_raw(conn, gpu_ids=gpus, since=b_lo, until=b_hi + step - 1, provider_ids=[provider_id],
                       slack=max(interval_s, step))
        written += _recompute(conn, raw, provider_id, step, b_lo, b_hi)
    return written


def rebuild(conn: Connection, provider_ids: Iterable[int] | None = None, *, horizon: int | None = None) -> int:
    """Recompute every roll-up (of ``provider_ids``, or all) from the stored intervals.

    Roll-ups of buckets before the raw-retention horizon (``prune``) are kept as they are:
    only the range that raw data still covers whole is recomputed. Each provider's intervals
    are read once and worked through in windows of ``REBUILD_WINDOW`` (bounded memory).
    ``horizon`` overrides the stored one (a migration older than ``store_meta`` passes 0)."""
    intervals = provider_intervals(conn)
    horizon = raw_horizon(conn) if horizon is None else horizon
    pids = list(provider_ids) if provider_ids is not None else sorted(
        p for (p,) in conn.execute(text("SELECT DISTINCT provider_id FROM price_interval")).all()
    )
    written = 0
    for pid in pids:
        raw = load_raw(conn, gpu_ids=gpu_ids(conn), provider_ids=[pid])
        if raw.empty:
            continue
        interval_s = intervals.get(pid, DEFAULT_INTERVAL_S)
        lo = max(int(raw["first_seen"].min()), horizon)
        hi = int(raw["last_seen"].max()) + interval_s
        start = floor(lo, DAY)
        first_s, last_s = raw["first_seen"].to_numpy(), raw["last_seen"].to_numpy()
        while start <= hi:
            end = min(start + REBUILD_WINDOW - 1, hi)
            for step in TABLES:
                b_lo, b_hi = max(floor(start, step), floor(lo, step)), floor(end, step)
                slack = max(interval_s, step)
                window = raw[(last_s >= b_lo - slack) & (first_s <= b_hi + step - 1)]
                written += _recompute(conn, window, pid, step, b_lo, b_hi)
            start += REBUILD_WINDOW
    return written


#: ``store_meta`` key: epoch seconds before which raw intervals were pruned.
HORIZON_KEY = "raw_pruned_before"


def raw_horizon(conn: Connection) -> int:
    """Epoch seconds (a day boundary) before which raw intervals were pruned (0: never)."""
    value = conn.execute(text("SELECT value FROM store_meta WHERE key = :k"), {"k": HORIZON_KEY}).scalar()
    return int(value) if value is not None else 0


def prune(conn: Connection, before: int) -> int:
    """Delete raw intervals that count in no bucket from the day holding ``before`` on (every
    day and hour they could count in is before it), keeping each offer's current interval;
    the roll-ups keep their buckets. Returns how many intervals were deleted.

    The horizon is rounded down to a day and only moves forward: buckets from it on still have
    all their intervals, so roll-up and raw answers there stay equal, and a rebuild never
    recomputes a bucket that lost intervals."""
    cutoff = max(floor(before, DAY), raw_horizon(conn))
    longest = max([*provider_intervals(conn).values(), DEFAULT_INTERVAL_S])
    # a price holds at most one collection interval after last_seen (and never past ends_at)
    deleted = conn.execute(text(
        "DELETE FROM price_interval WHERE last_seen + :longest < :cutoff AND (ends_at IS NULL OR ends_at <= :cutoff) "
        "AND id NOT IN (SELECT interval_id FROM offer_state)"), {"cutoff": cutoff, "longest": longest}).rowcount
    updated = conn.execute(text("UPDATE store_meta SET value = :v WHERE key = :k"), {"v": str(cutoff), "k": HORIZON_KEY}).rowcount
    if not updated:
        conn.execute(text("INSERT INTO store_meta (key, value) VALUES (:k, :v)"), {"v": str(cutoff), "k": HORIZON_KEY})
    return int(deleted or 0)


def read(
    conn: Connection,
    step: int,
    *,
    gpu_ids: Iterable[int],
    lo: int,
    hi: int,
    provider_ids: Iterable[int] | None = None,
    kind_ids: Iterable[int] | None = None,
) -> pd.DataFrame:
    """Roll-up rows of buckets starting in ``[lo, hi]`` (a primary-key range per GPU)."""
    cols = ["gpu_id", "bucket", "provider_id", "kind_id", "min", "median", "max", "offers"]
    gpus = list(gpu_ids)
    if not gpus:
        return pd.DataFrame(columns=cols)
    sql = (f"SELECT gpu_id, bucket, provider_id, kind_id, min, median, max, offers FROM {TABLES[step]} "
           "WHERE gpu_id IN :gpus AND bucket >= :lo AND bucket <= :hi")
    params: dict[str, object] = {"gpus": gpus, "lo": lo, "hi": hi}
    binds = [bindparam("gpus", expanding=True)]
    if provider_ids is not None:
        sql += " AND provider_id IN :providers"
        params["providers"] = list(provider_ids) or [-1]
        binds.append(bindparam("providers", expanding=True))
    if kind_ids is not None:
        sql += " AND kind_id IN :kinds"
        params["kinds"] = list(kind_ids) or [-1]
        binds.append(bindparam("kinds", expanding=True))
    return pd.DataFrame(conn.execute(text(sql).bindparams(*binds), params).all(), columns=cols)
