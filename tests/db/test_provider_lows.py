"""The lows grouped over kinds (``db.reads.provider_lows``, ``db.reads.provider_low_runs``): the
same values as the day rows and hourly runs themselves, on SQLite and PostgreSQL, empty results
included; ``db.spans.joined`` is ``db.spans.lows`` on pieces that do not overlap."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import rollups
from db.migrate import init_db
from db.reader import in_transaction
from db.reads import provider_low_runs, provider_lows
from db.spans import HOUR, joined, lows

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


#: (id, gpu, provider, kind) of the hourly series: two kinds of provider 3, one of provider 4.
SERIES = [(1, 1, 3, 14), (2, 1, 3, 15), (3, 1, 4, 14)]
#: (series, start hour, hours, min, median, max, offers) of the closed runs, then the open ones.
CLOSED_RUNS = [
    (1, 10, 5, 2.0, 2.0, 2.0, 1),  # hours 10-14, cut at 12
    (1, 15, 3, 2.0, 2.5, 3.0, 1),  # 15-17: only its median differs, so one run with 10-14
    (1, 20, 2, 2.0, 2.0, 2.0, 1),  # 20-21, after a gap: a run of its own
    (2, 16, 6, 1.0, 1.0, 1.0, 2),  # 16-21, the other kind, lower
    (3, 5, 30, 3.0, 3.0, 3.0, 1),  # 5-34, cut at both ends
]
OPEN_RUNS = [(1, 22, 4, 1.5, 1.5, 1.5, 1)]  # 22-25, cut at 23


def _store_runs(engine: Engine) -> None:
    init_db(engine)
    fields = ("s", "a", "h", "mn", "md", "mx", "o")
    insert = "INSERT INTO {} (series_id, start, hours, min, median, max, offers) VALUES (:s, :a, :h, :mn, :md, :mx, :o)"
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO rollup_series (id, gpu_id, provider_id, kind_id) VALUES (:i, :g, :p, :k)"),
                     [dict(zip("igpk", r, strict=True)) for r in SERIES])
        conn.execute(text(insert.format("rollup_hour_run")), [dict(zip(fields, r, strict=True)) for r in CLOSED_RUNS])
        conn.execute(text(insert.format("rollup_hour_open")), [dict(zip(fields, r, strict=True)) for r in OPEN_RUNS])


def test_hourly_lows_join_a_series_runs_and_sweep_over_kinds(engine: Engine) -> None:
    _store_runs(engine)
    with engine.connect() as conn:
        reader = in_transaction(conn)
        both = provider_low_runs(reader, HOUR, gpu_ids=[1], lo=12 * HOUR, hi=23 * HOUR)
        on_demand = provider_low_runs(reader, HOUR, gpu_ids=[1], lo=12 * HOUR, hi=23 * HOUR, kind_ids=[14])
        none = provider_low_runs(reader, HOUR, gpu_ids=[1], lo=40 * HOUR, hi=50 * HOUR, kind_ids=[14])
    assert both == {(1, 3): [(12, 15, 2.0, 1), (16, 17, 1.0, 3), (18, 19, 1.0, 2), (20, 21, 1.0, 3), (22, 23, 1.5, 1)],
                    (1, 4): [(12, 23, 3.0, 1)]}
    assert on_demand == {(1, 3): [(12, 17, 2.0, 1), (20, 21, 2.0, 1), (22, 23, 1.5, 1)], (1, 4): [(12, 23, 3.0, 1)]}
    assert none == {}


_pieces = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from([1.0, 2.0, None]),
                             st.integers(0, 2)), max_size=8)


@given(_pieces)
def test_joined_is_the_sweep_on_pieces_that_do_not_overlap(gaps: list[tuple[int, int, float | None, int]]) -> None:
    """Pieces laid out in order from gaps and lengths, and the same pieces with the last one
    reaching back into the one before it (overlap): ``joined`` answers as ``lows`` or declines."""
    pieces, at = [], 0
    for gap, length, price, offers in gaps:
        pieces.append((at + gap, at + gap + length, price, offers))
        at += gap + length + 1
    got = joined(pieces)
    assert got == (lows(pieces) if all(p[2] is not None for p in pieces) else None)
    if len(pieces) >= 2:
        _first, last, price, offers = pieces[-1]
        overlapping = [*pieces[:-1], (pieces[-2][1], last, price, offers)]
        assert joined(overlapping) is None
