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

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

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
