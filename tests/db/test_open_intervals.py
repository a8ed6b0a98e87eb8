"""Each offer's newest interval lives in ``price_interval_open`` and the earlier ones in
``price_interval_past`` (``db.intervals``): a collection that only extends intervals leaves every
past row as it was, an interval closed after extensions carries its true last observation and
count, and every row read through the view ``price_interval`` holds its true values (SQLite and
PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import intervals, reads
from db.reader import in_transaction
from db.spans import epoch
from tests.db.test_observation_store import HOUR, T0, Provider, offer


def raw_rows(engine: Engine, table: str = intervals.PAST_TABLE) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]


def rows(engine: Engine) -> list[reads.IntervalRow]:
    with Session(engine) as s:
        return reads.interval_rows(in_transaction(s.connection()))


def test_a_steady_collection_leaves_every_interval_row_as_it_was(engine: Engine) -> None:
    p = Provider(engine)
    p.ok(T0, offer("a"), offer("b", 3.0), offer("c", 4.0))
    p.ok(T0 + HOUR, offer("a"), offer("b", 3.5), offer("c", 4.0))  # b changes: closed and reopened
    before = raw_rows(engine)
    for k in range(2, 6):
        stats = p.ok(T0 + k * HOUR, offer("a"), offer("b", 3.5), offer("c", 4.0))
        assert stats.unchanged == 3
    assert raw_rows(engine) == before  # nothing scattered written: extensions went to the open rows
    assert [(r.price_per_hour, r.first_seen, r.last_seen, r.ends_at, r.observations) for r in rows(engine)] == [
        (2.0, T0, T0 + 5 * HOUR, None, 6), (3.0, T0, T0, T0 + HOUR, 1), (4.0, T0, T0 + 5 * HOUR, None, 6),
        (3.5, T0 + HOUR, T0 + 5 * HOUR, None, 5)]


def test_an_interval_closed_after_extensions_keeps_its_last_observation_and_count(engine: Engine) -> None:
    p = Provider(engine)
    for k in range(4):
        p.ok(T0 + k * HOUR, offer("a"), offer("b"))
    p.ok(T0 + 4 * HOUR, offer("a", 2.5))  # a changes, b is no longer listed
    assert p.failed(T0 + 5 * HOUR) == 1  # a's new interval ends at the failure
    with engine.connect() as conn:  # the view's rows, as any reader sees them
        closed = conn.execute(text("SELECT price_per_hour, first_seen, last_seen, ends_at, observations "
                                   "FROM price_interval ORDER BY id")).all()
    t = [epoch(T0 + k * HOUR) for k in range(6)]
    assert [tuple(r) for r in closed] == [(2.0, t[0], t[3], t[4], 4), (2.0, t[0], t[3], t[4], 4),
                                          (2.5, t[4], t[4], t[5], 1)]
    assert len(raw_rows(engine)) == 1 and len(raw_rows(engine, intervals.OPEN_TABLE)) == 2  # a's first went past


def test_an_open_interval_reads_its_true_values_from_a_plain_select(engine: Engine) -> None:
    p = Provider(engine)
    for k in range(3):
        p.ok(T0 + k * HOUR, offer("a"))
    with engine.connect() as conn:
        (last, n, ends), = conn.execute(text("SELECT last_seen, observations, ends_at FROM price_interval")).all()
        in_range = conn.execute(text("SELECT COUNT(*) FROM price_interval WHERE last_seen >= :a"),
                                {"a": epoch(T0 + 2 * HOUR)}).scalar_one()
        too_late = conn.execute(text("SELECT COUNT(*) FROM price_interval WHERE last_seen >= :a"),
                                {"a": epoch(T0 + 2 * HOUR + timedelta(seconds=1))}).scalar_one()
    assert (last, n, ends) == (epoch(T0 + 2 * HOUR), 3, None)
    assert (in_range, too_late) == (1, 0)
    assert raw_rows(engine) == []  # its only interval is its newest
    (row,) = rows(engine)
    assert (row.last_seen, row.observations, row.ends_at) == (T0 + 2 * HOUR, 3, None)


def test_an_out_of_order_observation_keeps_the_interval_it_leaves_open(engine: Engine) -> None:
    """An observation older than the open interval's last one (an import) opens a new interval
    without closing the open one: that one moves to the past with its true values."""
    p = Provider(engine)
    for k in range(2, 5):
        p.ok(T0 + k * HOUR, offer("a"))
    p.ok(T0, offer("a", 9.0))
    got = sorted((r.first_seen, r.last_seen, r.observations, r.price_per_hour) for r in rows(engine))
    assert got == [(T0, T0, 1, 9.0), (T0 + 2 * HOUR, T0 + 4 * HOUR, 3, 2.0)]
