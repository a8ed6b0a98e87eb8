"""Each provider's value per bucket of a history grid: roll-ups where they hold the answer,
raw intervals only where they must.

A provider's value in a bucket is its lowest USD per GPU-hour among the offers of the GPU
that count in the bucket (``db.rollups.spans``), and ``offers`` is how many offers those
are. Both come straight from the hourly/daily roll-ups (``min`` over kinds, ``offers``
summed: an offer has one provider and one kind) for every bucket the requested range covers
whole. Raw intervals answer the rest:

* the partial buckets at either end of the range (a range starting at 14:20 counts only
  prices in effect from 14:20 on, which a day's roll-up cannot tell);
* filters the roll-ups do not carry (regions), week buckets, and collection intervals given
  by the caller that differ from the stored ones in a way that changes which buckets a price
  holds into.

The two paths give the same numbers (a property test checks it on both backends), so
which one answered is an implementation detail; ``source`` in the result says which did.
Before the raw-retention horizon (``retention.raw_days``) only roll-ups are left: a partial
bucket there is answered by its whole roll-up bucket.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection, Engine

from db import labels, rollups
from db.engine import connected
from db.types import epoch
from tracker.analysis.frames import Filters, Resolution, Tolerance, expand_to_grid, load_intervals, tolerance_lookup

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

BUCKET_COLUMNS = ["time", "gpu", "provider", "value", "offers"]
_ROLLUP_STEPS = {Resolution.hour: rollups.HOUR, Resolution.day: rollups.DAY}


def from_intervals(intervals: pd.DataFrame, resolution: Resolution, since: pd.Timestamp, until: pd.Timestamp) -> pd.DataFrame:
    """Per-provider bucket values (``BUCKET_COLUMNS``) computed from loaded raw intervals, of those in
    effect at some point of ``[since, until]`` (what ``load_intervals(since=...)`` reads): a price
    that stopped holding before ``since`` is not in the range's first, partial bucket, however the
    intervals were loaded."""
    expanded = expand_to_grid(intervals[intervals["end"] > pd.Timestamp(since)], resolution, since, until)
    if expanded.empty:
        return pd.DataFrame(columns=BUCKET_COLUMNS)
    return (
        expanded.groupby(["time", "gpu", "provider"], as_index=False)
        .agg(value=("price", "min"), offers=("offer_id", "nunique"))
        [BUCKET_COLUMNS]
    )


def _raw(source: Engine | Connection | Session, f: Filters, res: Resolution, lo: pd.Timestamp, hi: pd.Timestamp,
         tolerance: Tolerance | None) -> pd.DataFrame:
    intervals = load_intervals(source, f, since=lo.to_pydatetime(), until=hi.to_pydatetime(), tolerance=tolerance)
    return from_intervals(intervals, res, lo, hi)


def holds(conn: Connection, tolerance: Tolerance | None = None) -> tuple[dict[int, int], int]:
    """How long a price may hold past its last observation: each provider's collection interval
    in seconds by provider label id (the stored ones, or ``tolerance``'s), and the longest of
    all, stored and given (the bound a read of "in effect from t" puts on ``last_seen``)."""
    stored = rollups.provider_intervals(conn)
    longest = max([*stored.values(), rollups.DEFAULT_INTERVAL_S])
    if tolerance is None:
        return stored, longest
    tol = tolerance_lookup(tolerance)
    given = {pid: int(tol(name).total_seconds()) for pid, name in labels.names(conn, "provider").items()}
    return given, max([longest, *given.values()])


def raw_intervals(conn: Connection, f: Filters, lo: int, hi: int, tolerance: Tolerance | None = None) -> pd.DataFrame:
    """The intervals ``load_intervals(f, since=lo, until=hi)`` returns (in effect at some point
    of ``[lo, hi]``, epoch seconds), as lean rows: ``db.rollups.load_raw``'s columns (label ids,
    integer times, ``interval_s``, ``next_seen``) plus ``end`` (``db.rollups.hold_end``) and the
    ``gpu`` and ``provider`` names. No offer columns, so no join: what partial buckets and
    "price at t" need, at a fraction of the cost. ``f`` must not filter regions (not in these rows)."""
    assert not f.regions, "region filters need load_intervals"
    gpu_ids = labels.lookup(conn, "gpu", f.gpus) if f.gpus is not None else sorted(labels.names(conn, "gpu"))
    provider_ids = labels.lookup(conn, "provider", f.providers) if f.providers else None
    kind_ids = labels.lookup(conn, "kind", f.kinds) if f.kinds else None
    per_provider, longest = holds(conn, tolerance)
    cols = rollups.raw_arrays(conn, gpu_ids=gpu_ids, since=lo, until=hi, provider_ids=provider_ids, kind_ids=kind_ids,
                              slack=longest, intervals=per_provider)
    end = rollups.hold_end(cols["last_seen"], cols["ends_at"], cols["interval_s"])
    keep = end > lo
    out = {c: a[keep] for c, a in cols.items()} | {"end": end[keep]}
    names = _name_lookup(conn)
    return pd.DataFrame(out | {"gpu": names[out["gpu_id"]], "provider": names[out["provider_id"]]})


def _name_lookup(conn: Connection) -> np.ndarray:
    """GPU and provider names indexed by label id (ids are unique across spaces)."""
    names = labels.names(conn, "gpu") | labels.names(conn, "provider")
    lookup = np.empty(max(names, default=0) + 1, dtype=object)
    lookup[list(names)] = list(names.values())
    return lookup


def _bucket_frame(conn: Connection, bucket: np.ndarray, gpu_id: np.ndarray, provider_id: np.ndarray,
                  value: np.ndarray, offers: np.ndarray) -> pd.DataFrame:
    """``BUCKET_COLUMNS`` from arrays of bucket starts (epoch seconds), label ids and figures."""
    if len(bucket) == 0:
        return pd.DataFrame(columns=BUCKET_COLUMNS)
    lookup = _name_lookup(conn)
    return pd.DataFrame({
        "time": pd.to_datetime(bucket.astype(np.int64), unit="s", utc=True),
        "gpu": lookup[gpu_id.astype(np.int64)],
        "provider": lookup[provider_id.astype(np.int64)],
        "value": value.astype(float),
        "offers": offers.astype(np.int64),
    })


def _raw_part(conn: Connection, f: Filters, step: int, lo: int, hi: int, tolerance: Tolerance | None) -> pd.DataFrame:
    """Per-provider values (``BUCKET_COLUMNS``) of the buckets of ``step`` holding ``[lo, hi]``
    (a partial bucket at one end of a range) from raw intervals."""
    return raw_buckets(conn, raw_intervals(conn, f, lo, hi, tolerance), step, lo, hi)


def raw_buckets(conn: Connection, raw: pd.DataFrame, step: int, lo: int, hi: int) -> pd.DataFrame:
    """Per-provider values (``BUCKET_COLUMNS``) of the buckets of ``step`` holding ``[lo, hi]``
    from ``raw_intervals(..., lo, hi)``: each provider's lowest price and its number of
    distinct offers."""
    expanded = rollups.expand(raw, step, lo, hi)
    if expanded.empty:
        return pd.DataFrame(columns=BUCKET_COLUMNS)
    bucket, gpu, provider, offer = (expanded[c].to_numpy(dtype=np.int64)
                                    for c in ("bucket", "gpu_id", "provider_id", "offer_id"))
    price = expanded["price"].to_numpy(dtype=float)
    order = np.lexsort((offer, provider, gpu, bucket))
    bucket, gpu, provider, offer, price = bucket[order], gpu[order], provider[order], offer[order], price[order]
    new_group = np.r_[True, (bucket[1:] != bucket[:-1]) | (gpu[1:] != gpu[:-1]) | (provider[1:] != provider[:-1])]
    new_offer = new_group | np.r_[True, offer[1:] != offer[:-1]]
    starts = np.flatnonzero(new_group)
    return _bucket_frame(conn, bucket[starts], gpu[starts], provider[starts], np.minimum.reduceat(price, starts),
                         np.add.reduceat(new_offer.astype(np.int64), starts))


def _tolerance_agrees(conn: Connection, tolerance: Tolerance | None, step: int, provider_ids: list[int]) -> bool:
    """Whether the caller's collection intervals put every price in the same buckets as the
    stored ones the roll-ups were built with (equal, or both no longer than a bucket)."""
    if tolerance is None:
        return True
    stored = rollups.provider_intervals(conn)
    names = labels.names(conn, "provider")
    tol = tolerance_lookup(tolerance)
    for pid in provider_ids:
        given = int(tol(names[pid]).total_seconds())
        have = stored.get(pid, rollups.DEFAULT_INTERVAL_S)
        if given != have and not (given <= step and have <= step):
            return False
    return True


def _read_rollups(conn: Connection, step: int, gpu_ids: list[int], provider_ids: list[int] | None,
                  kind_ids: list[int] | None, lo: int, hi: int) -> pd.DataFrame:
    gpu, bucket, provider, value, offers = rollups.provider_lows(conn, step, gpu_ids=gpu_ids, lo=lo, hi=hi,
                                                                 provider_ids=provider_ids, kind_ids=kind_ids)
    return _bucket_frame(conn, bucket, gpu, provider, value, offers)


def provider_buckets(
    source: Engine | Connection | Session,
    filters: Filters,
    resolution: Resolution,
    since: pd.Timestamp,
    until: pd.Timestamp,
    tolerance: Tolerance | None = None,
) -> tuple[pd.DataFrame, str]:
    """Per (time, gpu, provider) of the buckets from the one holding ``since`` to the one
    holding ``until``: ``value`` and ``offers`` (``BUCKET_COLUMNS``), and which data answered
    (``"rollups"``, ``"rollups+raw"`` or ``"raw"``)."""
    step = _ROLLUP_STEPS.get(resolution)
    if step is None or filters.regions:
        return _raw(source, filters, resolution, since, until, tolerance), "raw"
    lo, hi = epoch(since.to_pydatetime()), epoch(until.to_pydatetime())
    first_full = rollups.floor(lo, step) + (0 if lo % step == 0 else step)
    last_full = rollups.floor(hi + 1, step) - step  # the last bucket ending by ``until``
    if last_full < first_full:
        return _raw(source, filters, resolution, since, until, tolerance), "raw"
    with connected(source) as conn, labels.snapshot(conn):
        gpu_ids = labels.lookup(conn, "gpu", filters.gpus) if filters.gpus is not None else sorted(labels.names(conn, "gpu"))
        provider_ids = labels.lookup(conn, "provider", filters.providers) if filters.providers else None
        kind_ids = labels.lookup(conn, "kind", filters.kinds) if filters.kinds else None
        in_scope = provider_ids if provider_ids is not None else sorted(labels.names(conn, "provider"))
        if not gpu_ids:
            return pd.DataFrame(columns=BUCKET_COLUMNS), "rollups"
        if not _tolerance_agrees(conn, tolerance, step, in_scope):
            return _raw(conn, filters, resolution, since, until, tolerance), "raw"
        horizon = rollups.raw_horizon(conn)
        if lo < horizon:  # raw intervals there were pruned: the whole first bucket is what is known
            first_full = rollups.floor(lo, step)
        if hi < horizon:
            last_full = rollups.floor(hi, step)
        middle = _read_rollups(conn, step, gpu_ids, provider_ids, kind_ids, first_full, last_full)
        parts = [middle]
        used_raw = False
        if lo < first_full:
            parts.insert(0, _raw_part(conn, filters, step, lo, first_full - 1, tolerance))
            used_raw = True
        if last_full + step <= hi:
            parts.append(_raw_part(conn, filters, step, last_full + step, hi, tolerance))
            used_raw = True
    parts = [p for p in parts if not p.empty]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=BUCKET_COLUMNS)
    return out, "rollups+raw" if used_raw else "rollups"

