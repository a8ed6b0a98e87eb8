"""The CLI's pandas-free history (``history_rows``) gives every field ``History.rows()`` gives,
and the same notes, unit and providers: on random collection histories (hypothesis) and on
the bundled recordings replayed through the real pipeline, on SQLite and PostgreSQL; and the
scalar bucket rule and market statistics equal the array ones."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from db import direct, open_intervals, plain_reads, rollups, spans
from db.reader import reader_of
from tests.analysis.test_rollup_equivalence import FILTERS, MIN, PROVIDERS, T0, clear, events, queries_st, record
from tracker.analysis import history_rows as hr
from tracker.analysis.frames import Filters, Resolution
from tracker.analysis.history import _median, _quantile, history
from tracker.catalog.specs import catalog_rows_for_db, load_catalog
from tracker.cli.render import plain_value
from tracker.errors import ConfigError

METRICS = ("price", "cost-per-tflop", "breakeven-months")
#: Tolerances as the CLI passes them (``scrape_intervals``): none, the stored ones, and ones that
#: differ (a provider collected hourly taken as daily: its prices hold into other buckets).
TOLERANCES: dict[str, Any] = {"none": None, "stored": {p: timedelta(seconds=s) for p, s in PROVIDERS.items()},
                              "other": {"hourly": timedelta(days=1)}}


def as_json(rows: list[dict[str, Any]]) -> str:
    """The CLI's JSON of rows (``emit``)."""
    return json.dumps([{k: plain_value(v) for k, v in r.items()} for r in rows], indent=2)


def assert_same_answer(engine: Engine, f: Filters, **ask: Any) -> hr.HistoryRows:
    want = history(engine, f, **ask)
    with engine.connect() as conn:
        got = hr.history_rows(reader_of(conn), f, **ask)
    assert got is not None
    want_rows = want.rows()
    assert got.rows == want_rows
    assert as_json(got.rows) == as_json(want_rows)
    assert [list(r) for r in got.rows] == [list(r) for r in want_rows], "the same columns in the same order"
    assert (got.providers, got.unit, got.notes, got.metric, got.resolution) == (
        want.providers, want.unit, want.notes, want.metric, want.resolution)
    return got


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history_=events, asks=st.lists(st.tuples(queries_st, st.sampled_from(METRICS), st.sampled_from(sorted(TOLERANCES))),
                                      min_size=1, max_size=4),
       week=st.booleans())
def test_history_rows_equal_the_frames_on_random_histories(engine: Engine, history_, asks, week) -> None:  # noqa: ANN001
    clear(engine)
    record(engine, history_)
    for (start, length, every, which), metric, tolerance in asks:
        since = T0 + start * MIN
        until = since + timedelta(minutes=length)
        assert_same_answer(engine, FILTERS[which], metric=metric, since=since, until=until,
                           resolution="week" if week else every, tolerance=TOLERANCES[tolerance])


def test_history_rows_equal_the_frames_on_the_bundled_recordings(replay_store: str) -> None:
    """Every GPU of the replayed recordings (their own dates, months apart), at every resolution,
    over whole and partial buckets, with the filters and metrics the CLI offers."""
    from db.engine import make_engine

    engine = make_engine(replay_store)
    reader = direct.open_reader(replay_store, catalog_rows_for_db(load_catalog()))
    assert reader is not None
    try:
        with engine.connect() as conn:
            first, last = conn.exec_driver_sql(
                f"SELECT MIN(i.first_seen), MAX({open_intervals.LAST_SEEN}) FROM price_interval i").one()
        start = pd.Timestamp(int(first), unit="s", tz="UTC").to_pydatetime()
        end = pd.Timestamp(int(last), unit="s", tz="UTC").to_pydatetime()
        cases = [
            ("day", start - timedelta(days=3), end + timedelta(days=2)),
            ("week", start - timedelta(days=3), end + timedelta(days=2)),
            ("day", start + timedelta(minutes=30), end + timedelta(hours=5)),
            ("hour", end - timedelta(hours=30, minutes=10), end + timedelta(hours=3)),
        ]
        answered = 0
        asks = [(f, "price") for f in (Filters(), Filters(gpus=("H100-SXM", "H100-PCIe", "H100-NVL")))]
        asks += [(Filters(kinds=None), metric) for metric in METRICS]
        for every, since, until in cases:
            for f, metric in asks:
                ask = dict(metric=metric, since=since, until=until, resolution=every,
                           tolerance={"runpod": timedelta(hours=1)})
                got = assert_same_answer(engine, f, **ask)
                assert hr.history_rows(reader, f, **ask) == got, "the direct driver reads the same"
                answered += sum(r["min"] is not None for r in got.rows)
        assert answered > 100
    finally:
        reader.close()
        engine.dispose()


def test_regions_and_an_open_start_take_the_frame_path(engine: Engine) -> None:
    with engine.connect() as conn:
        reader = reader_of(conn)
        assert hr.history_rows(reader, Filters(regions=("r",)), since=T0, until=T0 + timedelta(days=1)) is None
        assert hr.history_rows(reader, Filters(), until=T0) is None
        with pytest.raises(ConfigError, match="--metric"):
            hr.history_rows(reader, Filters(), metric="bogus", since=T0)
        with pytest.raises(ConfigError, match="starts"):
            hr.history_rows(reader, Filters(), since=T0 + timedelta(days=1), until=T0)


@given(st.lists(st.floats(min_value=0.01, max_value=1e4, allow_nan=False), min_size=1, max_size=9))
def test_market_statistics_equal_the_array_forms(values: list[float]) -> None:
    ordered = sorted(values)
    v, starts, n = np.array(ordered), np.array([0]), np.array([len(ordered)])
    assert hr.median(ordered) == float(_median(v, starts, n)[0])
    for q in (0.25, 0.5, 0.75):
        assert hr.quantile(ordered, q) == float(_quantile(v, starts, n, q)[0])


intervals = st.tuples(st.integers(0, 30 * 86_400), st.integers(0, 5 * 86_400), st.one_of(st.none(), st.integers(0, 86_400)),
                      st.sampled_from((60, 1800, 3600, 86_400)), st.one_of(st.none(), st.integers(0, 86_400)))


@given(st.lists(intervals, min_size=1, max_size=20), st.sampled_from((spans.HOUR, spans.DAY, spans.WEEK)))
def test_the_scalar_bucket_rule_equals_the_array_one(rows: list[tuple[int, int, int | None, int, int | None]],
                                                     step: int) -> None:
    first = np.array([r[0] for r in rows], dtype=np.int64)
    last = first + np.array([r[1] for r in rows], dtype=np.int64)
    ends = np.array([math.nan if r[2] is None else float(l + r[2]) for r, l in zip(rows, last, strict=True)])
    interval = np.array([r[3] for r in rows], dtype=np.int64)
    nxt = np.array([math.nan if r[4] is None else float(l + r[4]) for r, l in zip(rows, last, strict=True)])
    want_first, want_last = rollups.span_indices(first, last, ends, interval, nxt, step)
    want_end = rollups.hold_end(last, ends, interval)
    for k in range(len(rows)):
        e = None if math.isnan(ends[k]) else int(ends[k])
        n = None if math.isnan(nxt[k]) else int(nxt[k])
        assert spans.span(int(first[k]), int(last[k]), e, int(interval[k]), n, step) == (want_first[k], want_last[k])
        assert spans.hold_end(int(last[k]), e, int(interval[k])) == want_end[k]


def test_the_plain_modules_constants_are_the_roll_ups() -> None:
    assert (spans.NEVER, plain_reads.MAX_RUN, plain_reads.HORIZON_KEY, hr.DEFAULT_INTERVAL_S) == (
        rollups._NEVER, rollups.MAX_RUN, rollups.HORIZON_KEY, rollups.DEFAULT_INTERVAL_S)
    assert spans.origin(spans.WEEK) == rollups.origin(rollups.WEEK) == Resolution.week.origin_s


@pytest.mark.parametrize("args", [
    ("--since", "2025-01-01", "--every", "1d", "--format", "json"),
    ("--since", "2025-06-01", "--every", "1w", "--kind", "all", "--format", "csv"),
    ("--since", "2025-06-01", "--metric", "cost-per-tflop", "--format", "tsv", "--wide"),
    ("--since", "2025-06-01", "--metric", "breakeven-months", "--provider", "runpod", "--format", "json"),
    ("--since", "2020-01-01", "--until", "2020-02-01", "--format", "table"),
])
def test_the_cli_prints_what_the_frame_path_prints(replay_store: str, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]) -> None:
    from tests.conftest import run_main

    fast = run_main(capsys, "--db", replay_store, "history", "--gpu", "H100", *args)
    monkeypatch.setattr(hr, "history_rows", lambda *_a, **_k: None)  # every option on the frame path
    frames = run_main(capsys, "--db", replay_store, "history", "--gpu", "H100", *args)
    assert fast == frames
    assert fast[0] == 0 and fast[1].strip()
