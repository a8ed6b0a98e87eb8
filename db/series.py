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
from operator import itemgetter
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from db import bulk, open_intervals

#: ``offer.extra`` key naming the archive series an imported offer belongs to.
SERIES_KEY = "import_series"


def series_of(extra: Any) -> str | None:
    """The series an offer's ``extra`` (a dict, or JSON text on some drivers) names, if any."""
    if isinstance(extra, str):
        extra = json.loads(extra)
    value = extra.get(SERIES_KEY) if isinstance(extra, dict) else None
    return str(value) if value else None


def times(conn: Connection, series: str) -> list[int]:
    """Every stored snapshot time of ``series`` (epoch seconds, oldest first)."""
    rows = conn.execute(text("SELECT at FROM snapshot_time WHERE series = :s ORDER BY at"), {"s": series}).all()
    return [int(t) for (t,) in rows]


def add(conn: Connection, series: str, new: Iterable[int]) -> None:
    """Record snapshot times of ``series`` (times already stored are left alone)."""
    rows = [{"s": series, "t": int(t)} for t in sorted(set(new))]
    if rows:
        conn.execute(text("INSERT INTO snapshot_time (series, at) VALUES (:s, :t) ON CONFLICT (series, at) DO NOTHING"),
                     rows)


def remove(conn: Connection, series: str, gone: Iterable[int]) -> None:
    """Forget snapshot times of ``series`` (a newer snapshot replaced them)."""
    rows = [{"s": series, "t": int(t)} for t in sorted(set(gone))]
    if rows:
        conn.execute(text("DELETE FROM snapshot_time WHERE series = :s AND at = :t"), rows)


def of_offers(conn: Connection, offer_ids: Iterable[int]) -> dict[int, str]:
    """``{offer id: series}`` of the given offers that belong to an imported series."""
    ids = sorted(set(offer_ids))
    if not ids:
        return {}
    rows = conn.execute(text("SELECT id, extra FROM offer WHERE id IN :ids").bindparams(bindparam("ids", expanding=True)),
                        {"ids": ids}).all()
    return {int(i): s for i, extra in rows if (s := series_of(extra)) is not None}


def times_between(conn: Connection, series: Iterable[str], lo: int, hi: int) -> list[int]:
    """Snapshot times of any of ``series`` in ``[lo, hi]`` (epoch seconds, oldest first, once each)."""
    names = sorted(set(series))
    if not names:
        return []
    rows = conn.execute(text("SELECT DISTINCT at FROM snapshot_time WHERE series IN :s AND at >= :lo AND at <= :hi "
                             "ORDER BY at").bindparams(bindparam("s", expanding=True)),
                        {"s": names, "lo": lo, "hi": hi}).all()
    return [int(t) for (t,) in rows]


#: ``price_interval`` columns an import re-cuts (everything but ``id``).
INTERVAL_COLUMNS = ("offer_id", "provider_id", "gpu_id", "kind_id", "currency_id", "price_per_hour",
                    "price_per_gpu_hour", "available", "first_seen", "last_seen", "ends_at", "observations")
#: What an import compares of a stored and a re-cut interval: its columns and its stated start
#: (``interval_stated_start``; ``None`` without one).
RECUT_COLUMNS = (*INTERVAL_COLUMNS, "stated_start")


#: ``INTERVAL_COLUMNS`` read through ``db.open_intervals`` (the true values of an open interval).
_TRUE = {"last_seen": f"{open_intervals.LAST_SEEN} AS last_seen", "observations": f"{open_intervals.OBSERVATIONS} AS observations"}


def intervals_between(conn: Connection, offer_ids: Iterable[int], lo: int, hi: int) -> list[dict[str, Any]]:
    """Intervals (``id`` plus ``RECUT_COLUMNS``) of the given offers observed during ``[lo, hi]``."""
    ids = sorted(set(offer_ids))
    if not ids:
        return []
    rows = conn.execute(text(f"SELECT i.id, {', '.join(_TRUE.get(c, 'i.' + c) for c in INTERVAL_COLUMNS)}, "
                             "ss.stated_start FROM price_interval i "
                             "LEFT JOIN interval_stated_start ss ON ss.interval_id = i.id WHERE i.offer_id IN :ids "
                             f"AND {open_intervals.seen_since('i', ':lo')} AND i.first_seen <= :hi")
                        .bindparams(bindparam("ids", expanding=True)), {"ids": ids, "lo": lo, "hi": hi}).mappings().all()
    return [{**r, "available": None if r["available"] is None else bool(r["available"])} for r in rows]


def prices_before(conn: Connection, offer_ids: Iterable[int], t: int) -> dict[int, float]:
    """Each offer's whole-instance price in its newest interval last seen before ``t``."""
    ids = sorted(set(offer_ids))
    if not ids:
        return {}
    rows = conn.execute(text(
        "SELECT i.offer_id, i.price_per_hour, i.first_seen FROM price_interval i JOIN ("
        f"SELECT j.offer_id, MAX({open_intervals.last_seen('j')}) AS m FROM price_interval j WHERE j.offer_id IN :ids "
        f"AND {open_intervals.last_seen('j')} < :t GROUP BY j.offer_id) x ON x.offer_id = i.offer_id "
        f"AND x.m = {open_intervals.LAST_SEEN} ORDER BY i.first_seen"
    ).bindparams(bindparam("ids", expanding=True)), {"ids": ids, "t": t}).all()
    return {int(o): float(p) for o, p, _f in rows}


def replace_intervals(conn: Connection, provider_id: int, drop: Iterable[int], rows: list[dict[str, Any]],
                      offer_ids: Iterable[int], lo: int, hi: int) -> None:
    """Delete the intervals ``drop``, insert ``rows`` (``RECUT_COLUMNS``), then point each of
    ``offer_ids``' ``offer_state`` at its newest interval: one first seen in ``[lo, hi]``, unless
    the state already names a later one; a state whose interval was dropped with none first seen
    in the range after it (a re-cut that holds every later observation of the offer) names the
    offer's newest interval before the range, as an import of every snapshot at once leaves it.

    The rows are written with their true ``last_seen``/``observations``: the offers' open
    intervals are settled first and handed back to ``offer_state`` at the end (``db.open_intervals``)."""
    open_intervals.settle_offers(conn, sorted(set(offer_ids)))
    dropped = sorted(set(drop))
    if dropped:
        for table, column in (("interval_stated_start", "interval_id"), ("price_interval", "id")):
            conn.execute(text(f"DELETE FROM {table} WHERE {column} IN :ids").bindparams(bindparam("ids", expanding=True)),
                         {"ids": dropped})
    if rows:
        columns = itemgetter(*INTERVAL_COLUMNS)
        bulk.insert_many(conn, "price_interval", INTERVAL_COLUMNS, [columns(r) for r in rows])
        for r in rows:  # rare: a start stated before the first stored observation
            if r.get("stated_start") is not None:
                conn.execute(text(
                    "INSERT INTO interval_stated_start (interval_id, stated_start) SELECT MAX(id), :s FROM price_interval "
                    "WHERE offer_id = :o AND first_seen = :f"), {"s": r["stated_start"], "o": r["offer_id"], "f": r["first_seen"]})
    ids = sorted(set(offer_ids))
    if not ids:
        return
    expanding = bindparam("ids", expanding=True)
    m, many = bulk.mark(conn), bulk.id_param(conn, ids)  # every id in one parameter: no limit on how many
    newest: dict[int, tuple[int, int, int, int]] = {}
    for iid, oid, first, last, seen in conn.exec_driver_sql(
        "SELECT id, offer_id, first_seen, last_seen, observations FROM price_interval "
        f"WHERE {bulk.in_ids(conn, 'offer_id')} AND first_seen >= {m} AND first_seen <= {m}", (many, lo, hi)).all():
        if oid not in newest or first > newest[oid][1]:
            newest[oid] = (iid, first, last, seen)
    later = {int(oid) for (oid,) in conn.exec_driver_sql(
        "SELECT s.offer_id FROM offer_state s JOIN price_interval i ON i.id = s.interval_id "
        f"WHERE {bulk.in_ids(conn, 's.offer_id')} AND i.first_seen > {m}", (many, hi)).all()}
    orphaned = [int(oid) for (oid,) in conn.exec_driver_sql(
        "SELECT s.offer_id FROM offer_state s LEFT JOIN price_interval i ON i.id = s.interval_id "
        f"WHERE {bulk.in_ids(conn, 's.offer_id')} AND i.id IS NULL", (many,)).all() if oid not in newest]
    if orphaned:
        for iid, oid, first, last, seen in conn.execute(text(
            "SELECT id, offer_id, first_seen, last_seen, observations FROM price_interval WHERE offer_id IN :ids")
                .bindparams(expanding), {"ids": orphaned}).all():
            if oid not in newest or first > newest[oid][1]:
                newest[oid] = (iid, first, last, seen)
        if gone := [oid for oid in orphaned if oid not in newest]:
            conn.execute(text("DELETE FROM offer_state WHERE offer_id IN :ids").bindparams(expanding), {"ids": gone})
    state = [{"offer_id": oid, "interval_id": iid, "provider_id": provider_id, "last_seen": last, "observations": seen}
             for oid, (iid, _first, last, seen) in sorted(newest.items()) if oid not in later]
    if state:
        conn.exec_driver_sql("INSERT INTO offer_state (offer_id, interval_id, provider_id, last_seen, observations) "
                             f"VALUES ({bulk.placeholders(conn, 5)}) {bulk.OFFER_STATE_UPSERT}",
                             [(r["offer_id"], r["interval_id"], r["provider_id"], r["last_seen"], r["observations"])
                              for r in state])
    open_intervals.seal(conn, ids)


def next_first_seen(conn: Connection, offer_ids: Iterable[int], t: int) -> int | None:
    """The first observation after ``t`` that starts an interval of one of the offers, if any."""
    ids = sorted(set(offer_ids))
    if not ids:
        return None
    value = conn.execute(text("SELECT MIN(first_seen) FROM price_interval WHERE offer_id IN :ids AND first_seen > :t")
                         .bindparams(bindparam("ids", expanding=True)), {"ids": ids, "t": t}).scalar()
    return int(value) if value is not None else None


def add_many(conn: Connection, rows: Iterable[tuple[str, int]]) -> None:
    """Record snapshot times of many series at once (``(series, at)`` pairs; stored ones are left alone)."""
    params = sorted({(s, int(t)) for s, t in rows})
    if params:
        m = bulk.mark(conn)
        conn.exec_driver_sql(f"INSERT INTO snapshot_time (series, at) VALUES ({m}, {m}) ON CONFLICT (series, at) DO NOTHING",
                             params)


def stored_times(conn: Connection, series: Iterable[str]) -> dict[str, list[int]]:
    """``{series: its stored snapshot times, oldest first}`` of the given series that have any."""
    names = sorted(set(series))
    out: dict[str, list[int]] = {}
    for k in range(0, len(names), 5000):  # bounded statements (SQLite's parameter limit)
        for s, t in conn.execute(text("SELECT series, at FROM snapshot_time WHERE series IN :s ORDER BY series, at")
                                 .bindparams(bindparam("s", expanding=True)), {"s": names[k:k + 5000]}).all():
            out.setdefault(s, []).append(int(t))
    return out
