"""The day lows grouped over kinds (``db.reads.provider_lows``): the same values as the
rows themselves, on SQLite and PostgreSQL, empty results included."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import rollups
from db.migrate import init_db
from db.reader import in_transaction
from db.reads import provider_lows

#: (gpu, bucket, provider, kind, min, median, max, offers): two kinds of one provider on one day.
DAY_ROWS = [
    (1, 86_400, 3, 14, 2.5, 2.5, 2.5, 4),
    (1, 86_400, 3, 15, 1.25, 1.5, 1.75, 2),
    (1, 86_400, 4, 14, 3.0, 3.0, 3.0, 1),
    (1, 0, 3, 14, 0.1 + 0.2, 1.0, 9.0, 7),
    (2, 0, 3, 14, 1e-9, 1.0, 1.0, 1),
    (1, 1_795_910_400, 3, 14, 1234.5678, 1234.5678, 1234.5678, 1_000_000),
]


def _store(engine: Engine) -> None:
    init_db(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO rollup_day (gpu_id, bucket, provider_id, kind_id, min, median, max, offers) "
                          "VALUES (:g, :b, :p, :k, :mn, :md, :mx, :o)"),
                     [dict(zip(("g", "b", "p", "k", "mn", "md", "mx", "o"), r, strict=True)) for r in DAY_ROWS])


def test_day_lows_are_grouped_over_kinds_and_sorted(engine: Engine) -> None:
    _store(engine)
    with engine.connect() as conn:
        reader = in_transaction(conn)
        lows = provider_lows(reader, rollups.DAY, gpu_ids=[1, 2], lo=0, hi=86_400)
        spot = provider_lows(reader, rollups.DAY, gpu_ids=[1], lo=0, hi=86_400, kind_ids=[15])
        none = provider_lows(reader, rollups.DAY, gpu_ids=[1], lo=2 * 86_400, hi=3 * 86_400)
    assert lows == [(1, 0, 3, 0.1 + 0.2, 7), (1, 86_400, 3, 1.25, 6), (1, 86_400, 4, 3.0, 1), (2, 0, 3, 1e-9, 1)]
    assert spot == [(1, 86_400, 3, 1.25, 2)]
    assert none == []
