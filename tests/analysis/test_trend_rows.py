"""The CLI's pandas-free trends (``trend_rows``) give every field the frame path's rows give
(``records(trends(...))``), in the same order: on random collection histories (hypothesis,
stretched over up to months), with pruned raw intervals, and on the bundled recordings replayed
through the real pipeline, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from db import direct, open_intervals
from db.reader import reader_of
from db.times import from_epoch
from tests.analysis.test_history_rows import TOLERANCES
from tests.analysis.test_retention import HISTORY
from tests.analysis.test_rollup_equivalence import FILTERS, MIN, T0, clear, events, record
from tracker.analysis import trends as frame_trends
from tracker.analysis.frames import Filters, records
from tracker.analysis.trend_rows import low_run, trend_rows
from tracker.catalog.specs import catalog_rows_for_db, load_catalog
from tracker.cli.render import plain_value
from tracker.pipeline.retention import prune_raw


def as_json(rows: list[dict[str, Any]]) -> str:
    """The CLI's JSON of rows (``emit``)."""
    return json.dumps([{k: plain_value(v) for k, v in r.items()} for r in rows], indent=2)


def assert_same_answer(engine: Engine, f: Filters, **ask: Any) -> list[dict[str, Any]]:
    want = records(frame_trends.trends(engine, f, **ask))
    with engine.connect() as conn:
        got = trend_rows(reader_of(conn), f, **ask)
    assert got is not None
    assert got == want
    assert as_json(got) == as_json(want)
    assert [list(r) for r in got] == [list(r) for r in want], "the same columns in the same order"
    return got


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history_=events, stretch=st.sampled_from((1, 1, 12, 60)),
       asks=st.lists(st.tuples(st.sampled_from(sorted(FILTERS)), st.one_of(st.none(), st.integers(-60, 40 * 24 * 60)),
                               st.sampled_from(sorted(TOLERANCES))), min_size=1, max_size=4))
def test_trend_rows_equal_the_frames_on_random_histories(engine: Engine, history_, stretch, asks) -> None:  # noqa: ANN001
    clear(engine)
    record(engine, [(p, minutes * stretch, ok, listed) for p, minutes, ok, listed in history_])
    for which, minutes, tolerance in asks:
        as_of = None if minutes is None else T0 + minutes * stretch * MIN + timedelta(seconds=minutes % 7)
        assert_same_answer(engine, FILTERS[which], as_of=as_of, tolerance=TOLERANCES[tolerance])


def test_trend_rows_equal_the_frames_with_pruned_raw_intervals(engine: Engine) -> None:
    """Before the raw-retention horizon only the day roll-ups are left: the time of an all-time
    low there is its day, with no provider (``_lows_from_rollups``)."""
    end = record(engine, HISTORY)
    prune_raw(engine, raw_days=1, now=end)
    for f in (Filters(), Filters(kinds=None), Filters(providers=("daily",))):
        for as_of in (None, end - timedelta(days=1, minutes=7), end - timedelta(days=4), end + timedelta(days=95)):
            assert_same_answer(engine, f, as_of=as_of, tolerance=None)
    got = assert_same_answer(engine, Filters(), as_of=end)
    assert (got[0]["all_time_low"], got[0]["all_time_low_provider"]) == (2.0, None), "its raw intervals were pruned"


def test_trend_rows_equal_the_frames_on_the_bundled_recordings(replay_store: str) -> None:
    """Every GPU of the replayed recordings (their own dates, months apart), now and at times
    between and after them, with the filters the CLI offers; the direct driver reads the same."""
    from db.engine import make_engine

    engine = make_engine(replay_store)
    reader = direct.open_reader(replay_store, catalog_rows_for_db(load_catalog()))
    assert reader is not None
    try:
        with engine.connect() as conn:
            first, last = conn.exec_driver_sql(
                f"SELECT MIN(i.first_seen), MAX({open_intervals.LAST_SEEN}) FROM price_interval i").one()
        start, end = from_epoch(int(first)), from_epoch(int(last))
        filters = [Filters(), Filters(kinds=None), Filters(gpus=("H100-SXM", "H100-PCIe", "H100-NVL")),
                   Filters(providers=("runpod", "lambda"), kinds=None)]
        shown = 0
        for f in filters:
            for as_of in (None, start + timedelta(hours=1), end - timedelta(days=3), end + timedelta(days=40)):
                ask = dict(as_of=as_of, tolerance={"runpod": timedelta(hours=1), "aws": timedelta(days=1)})
                got = assert_same_answer(engine, f, **ask)
                assert trend_rows(reader, f, **ask) == got, "the direct driver reads the same"
                shown += sum(r["current"] is not None for r in got)
        assert shown > 10
    finally:
        reader.close()
        engine.dispose()


def test_regions_take_the_frame_path(engine: Engine) -> None:
    with engine.connect() as conn:
        assert trend_rows(reader_of(conn), Filters(regions=("r",))) is None
        assert trend_rows(reader_of(conn), Filters()) == [], "an empty store has no trends"


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from((1.0, 1.5, 2.0))), min_size=1, max_size=12),
       st.integers(0, 40))
def test_the_low_run_of_plain_lists_equals_the_arrays_one(steps: list[tuple[int, float]], today: int) -> None:
    """``trends`` calls ``low_run`` on numpy arrays, ``trend_rows`` on lists: the same answer."""
    days, day = [], 0
    for gap, _ in steps:
        day += (gap + 1) * 86_400
        days.append(day)
    lows = [v for _, v in steps]
    assert low_run(days, lows, today * 86_400) == low_run(np.array(days), np.array(lows), today * 86_400)
