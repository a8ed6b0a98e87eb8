"""Snapshot times of imported archive series (the ``snapshot_time`` table).

A *series* is the part of a provider's list one archive speaks for (one GPU type of an
aggregator, one cloud's catalog); its snapshots are its collections. An interval keeps only
its first and last observation and how many there were; with the series' snapshot times the
observations in between are known exactly (every snapshot of the series from ``first_seen``
to ``last_seen`` saw the offer at that price), which is what re-cutting intervals for an
import that arrives out of order needs, and what a backtest evaluates at. An offer belongs to
the series named in its ``extra[SERIES_KEY]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from db import intervals, reads
from db.reader import in_transaction

#: ``offer.extra`` key naming the archive series an imported offer belongs to.
SERIES_KEY = "import_series"


def series_of(extra: Any) -> str | None:
    """The series an offer's ``extra`` (a dict, or JSON text on some drivers: ``db.reads.extra_dict``) names, if any."""
    value = reads.extra_dict(extra).get(SERIES_KEY)
    return str(value) if value else None


def remove(conn: Connection, series: str, gone: Iterable[int]) -> None:
    """Forget snapshot times of ``series`` (a newer snapshot replaced them)."""
    rows = [{"s": series, "t": int(t)} for t in sorted(set(gone))]
    if rows:
        conn.execute(text("DELETE FROM snapshot_time WHERE series = :s AND at = :t"), rows)


#: What an import compares of a stored and a re-cut interval: its columns but ``id``, the stated
#: start last (``None`` without one).
RECUT_COLUMNS = intervals.COLUMNS


def intervals_between(conn: Connection, offer_ids: Iterable[int], lo: int, hi: int) -> list[dict[str, Any]]:
    """Intervals (``id`` plus ``RECUT_COLUMNS``) of the given offers observed during ``[lo, hi]``."""
    ids = sorted(set(offer_ids))
    if not ids:
        return []
    rows = in_transaction(conn).mappings(f"SELECT id, {', '.join(RECUT_COLUMNS)} FROM price_interval WHERE offer_id IN :ids "
                                         "AND last_seen >= :lo AND first_seen <= :hi", {"ids": ids, "lo": lo, "hi": hi})
    return [{**r, "available": None if r["available"] is None else bool(r["available"])} for r in rows]


def prices_before(conn: Connection, offer_ids: Iterable[int], t: int) -> dict[int, float]:
    """Each offer's whole-instance price in its newest interval last seen before ``t``."""
    ids = sorted(set(offer_ids))
    if not ids:
        return {}
    rows = in_transaction(conn).rows(
        "SELECT i.offer_id, i.price_per_hour, i.first_seen FROM price_interval i JOIN ("
        "SELECT j.offer_id, MAX(j.last_seen) AS m FROM price_interval j WHERE j.offer_id IN :ids "
        "AND j.last_seen < :t GROUP BY j.offer_id) x ON x.offer_id = i.offer_id AND x.m = i.last_seen ORDER BY i.first_seen",
        {"ids": ids, "t": t})
    return {int(o): float(p) for o, p, _f in rows}


def replace_intervals(conn: Connection, provider_id: int, drop: Iterable[int], rows: list[dict[str, Any]],
                      offer_ids: Iterable[int], lo: int, hi: int) -> None:
    """Delete the intervals ``drop``, insert ``rows`` (``RECUT_COLUMNS``), then make each of
    ``offer_ids``' newest interval (``price_interval_open``) the one first seen last in ``[lo,
    hi]``, unless the offer's newest was first seen after the range; an offer whose newest was
    dropped with none first seen in the range after it (a re-cut that holds every later
    observation of the offer) takes its newest interval before the range, as an import of every
    snapshot at once leaves it. ``provider_id``: the provider of every row (all one provider's).

    The offers' intervals all move to the past first (``db.intervals.retire``) and the chosen
    ones come back (``promote``), so the re-cut works on one table."""
    ids = sorted(set(offer_ids))
    before = conn.exec_driver_sql(
        f"SELECT offer_id, id, first_seen, available_count FROM {intervals.OPEN_TABLE} WHERE {intervals.in_ids(conn, 'offer_id')}",
        (intervals.id_param(conn, ids),)).all()  # every id in one parameter: no limit on how many
    newest_before = {int(oid): (int(iid), int(first)) for oid, iid, first, _count in before}
    intervals.retire(conn, ids)
    dropped = sorted(set(drop))
    if dropped:
        conn.exec_driver_sql(f"DELETE FROM {intervals.PAST_TABLE} WHERE {intervals.in_ids(conn, 'id')}",
                             (intervals.id_param(conn, dropped),))
    if rows:
        new = intervals.new_ids(conn, len(rows))
        intervals.insert_many(conn, intervals.PAST_TABLE, ("id", *RECUT_COLUMNS),
                         [(i, *(r.get(c) for c in RECUT_COLUMNS)) for i, r in zip(new, rows, strict=True)])
    if ids:
        intervals.promote(conn, _newest(conn, ids, newest_before, set(dropped), lo, hi).values())
        counts = [(count, oid) for oid, _iid, _first, count in before if count is not None]
        if counts:  # the GPUs free now are the offer's, whichever interval is its newest
            m = intervals.mark(conn)
            conn.exec_driver_sql(f"UPDATE {intervals.OPEN_TABLE} SET available_count = {m} WHERE offer_id = {m}", counts)


def _newest(conn: Connection, ids: list[int], before: dict[int, tuple[int, int]], dropped: set[int], lo: int,
            hi: int) -> dict[int, int]:
    """``{offer: interval}``: which interval is each offer's newest after a re-cut (``replace_intervals``);
    ``before``: each offer's newest (id, first seen) before it."""
    def latest(sql: str, params: tuple[Any, ...]) -> dict[int, int]:
        best: dict[int, tuple[int, int]] = {}
        for iid, oid, first in conn.exec_driver_sql(sql, params).all():
            if oid not in best or first > best[oid][1]:
                best[oid] = (int(iid), int(first))
        return {oid: iid for oid, (iid, _f) in best.items()}

    m, of = intervals.mark(conn), f"SELECT id, offer_id, first_seen FROM {intervals.PAST_TABLE} WHERE {intervals.in_ids(conn, 'offer_id')}"
    in_range = latest(f"{of} AND first_seen >= {m} AND first_seen <= {m}", (intervals.id_param(conn, ids), lo, hi))
    chosen: dict[int, int] = {}
    orphaned: list[int] = []
    for oid in ids:
        prev = before.get(oid)
        alive = prev is not None and prev[0] not in dropped
        if alive and prev is not None and prev[1] > hi:  # its newest lies after the range
            chosen[oid] = prev[0]
        elif oid in in_range:
            chosen[oid] = in_range[oid]
        elif alive and prev is not None:
            chosen[oid] = prev[0]
        elif prev is not None:
            orphaned.append(oid)
    if orphaned:
        chosen |= latest(of, (intervals.id_param(conn, orphaned),))
    return chosen


def next_first_seen(conn: Connection, offer_ids: Iterable[int], t: int) -> int | None:
    """The first observation after ``t`` that starts an interval of one of the offers, if any."""
    ids = sorted(set(offer_ids))
    if not ids:
        return None
    value = in_transaction(conn).scalar("SELECT MIN(first_seen) FROM price_interval WHERE offer_id IN :ids "
                                        "AND first_seen > :t", {"ids": ids, "t": t})
    return int(value) if value is not None else None


def add_many(conn: Connection, rows: Iterable[tuple[str, int]]) -> None:
    """Record snapshot times of many series at once (``(series, at)`` pairs; stored ones are left
    alone): a driver ``executemany`` on SQLite, one statement of two arrays on PostgreSQL (where
    each row of an ``executemany`` is a statement of its own)."""
    params = sorted({(s, int(t)) for s, t in rows})
    if not params:
        return
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("INSERT INTO snapshot_time (series, at) SELECT * FROM unnest(%s::text[], %s::bigint[]) "
                             "ON CONFLICT (series, at) DO NOTHING", ([s for s, _t in params], [t for _s, t in params]))
        return
    m = intervals.mark(conn)
    conn.exec_driver_sql(f"INSERT INTO snapshot_time (series, at) VALUES ({m}, {m}) ON CONFLICT (series, at) DO NOTHING",
                         params)


def stored_times(conn: Connection, series: Iterable[str]) -> dict[str, list[int]]:
    """``{series: its stored snapshot times, oldest first}`` of the given series that have any,
    read by index whatever the table's size (the names go in as one parameter: a JSON array on
    SQLite, an array on PostgreSQL, whose plan of a long import's growing table would scan it)."""
    names = sorted(set(series))
    out: dict[str, list[int]] = {}
    if not names:
        return out
    if conn.dialect.name == "sqlite":
        sql, param = "SELECT series, at FROM snapshot_time WHERE series IN (SELECT value FROM json_each(?))", json.dumps(names)
    else:  # one index lookup per name (``OFFSET 0`` keeps the join from becoming a scan of the table)
        sql, param = ("SELECT s.series, s.at FROM unnest(%s::text[]) AS w(name) CROSS JOIN LATERAL "
                      "(SELECT series, at FROM snapshot_time WHERE series = w.name OFFSET 0) AS s"), names
    for s, t in conn.exec_driver_sql(f"{sql} ORDER BY 1, 2", (param,)):
        out.setdefault(s, []).append(int(t))
    return out
