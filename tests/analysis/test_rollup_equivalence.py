"""Roll-up answers equal raw-interval answers: on random collection histories (hypothesis) and on
the bundled real recordings replayed through the real pipeline, on SQLite and PostgreSQL.

``price_history`` reads the hourly/daily roll-ups for the buckets a range covers whole and raw
intervals for the partial ones; ``price_history(..., use_rollups=False)`` is the all-raw answer.
Trends read the day roll-ups for the all-time low; a filter on every stored region makes them
read every raw interval instead.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db import labels
from db.engine import engine_reader, session_scope
from db.spans import epoch
from tests.conftest import read, replay_recordings_at
from tracker.analysis.grid import Filters, Resolution
from tracker.analysis.history import price_history, provider_runs
from tracker.analysis.trends import PERIODS, trends
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
MIN = timedelta(minutes=1)
PROVIDERS = {"hourly": 3600, "half": 1800, "daily": 86_400}
SKUS = ("a", "b", "c")
GPUS = ("H100-SXM", "A100-SXM-80GB")
TABLES = ("price_interval_open", "price_interval_past", "rollup_hour_run", "rollup_hour_open",
          "rollup_series", "rollup_day", "offer", "scrape_run", "provider", "label")


def offer(provider: str, sku: str, kind: str, gpu: str, price: float) -> NormalisedOffer:
    return NormalisedOffer(provider=provider, sku=sku, region="r", kind=kind, term_months=0, gpu=gpu, gpu_raw=gpu,
                           gpu_count=1, price_per_hour=price, price_per_gpu_hour=price, currency="USD", available=True)


# one collection: (provider, minutes after the previous event, ok?, listed offers)
listing = st.lists(
    st.tuples(st.sampled_from(SKUS), st.sampled_from(("on_demand", "spot")), st.sampled_from(GPUS),
              st.sampled_from((1.0, 1.5, 2.0, 2.25))),
    min_size=1, max_size=5,
)
events = st.lists(
    st.tuples(st.sampled_from(sorted(PROVIDERS)), st.sampled_from((0, 20, 30, 60, 90, 600, 1500)), st.booleans(),
              listing),
    min_size=1, max_size=14,
)
# a range: start (minutes after T0, often on the hour), length in minutes, resolution, filters
queries_st = st.tuples(
    st.builds(lambda h, m: 60 * h + m, st.integers(-2, 40), st.sampled_from((0, 0, 17))),
    st.builds(lambda h, m: 60 * h + m, st.integers(0, 60), st.sampled_from((0, 0, 40))),
    st.sampled_from(("hour", "day")),
    st.sampled_from(("default", "all", "hourly-only")),
)


def clear(engine: Engine) -> None:
    with engine.begin() as conn:
        for t in TABLES:
            conn.execute(text(f"DELETE FROM {t}"))


def record(engine: Engine, history: list[tuple[str, int, bool, list[tuple[str, str, str, float]]]]) -> datetime:
    at = T0
    for provider, minutes, ok, listed in history:
        at += minutes * MIN + MIN  # never two events at the same minute
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, provider)
            if ok and listed:
                offers = [offer(provider, sku, kind, gpu, price) for sku, kind, gpu, price in listed]
                store_stage.store_observation(s, provider, offers, at, prov.last_attempt_at,
                                              interval_s=PROVIDERS[provider])
                prov.last_success_at, prov.last_status = at, "ok"
            else:
                store_stage.record_failed_attempt(s, provider, at)
                prov.last_status = "failed"
            prov.last_attempt_at = at
    return at


def both_ways(engine: Engine, f: Filters, res: Resolution, since: pd.Timestamp, until: pd.Timestamp) -> tuple[pd.DataFrame, pd.DataFrame]:
    h = read(engine, price_history,  f, since=since.to_pydatetime(), until=until.to_pydatetime(), resolution=res)
    raw = read(engine, price_history,  f, since=since.to_pydatetime(), until=until.to_pydatetime(), resolution=res,
                        use_rollups=False)
    return (h.market, h.by_provider), (raw.market, raw.by_provider)  # type: ignore[return-value]


def assert_same(got: tuple[pd.DataFrame, pd.DataFrame], want: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    for a, b in zip(got, want, strict=True):
        if a.empty or b.empty:
            assert a.empty and b.empty, (a, b)
            continue
        assert len(a) == len(b)
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False)


FILTERS = {"default": Filters(), "all": Filters(kinds=None), "hourly-only": Filters(providers=("hourly", "half"))}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=events, asks=st.lists(queries_st, min_size=1, max_size=4))
def test_rollup_answers_equal_raw_answers_on_random_histories(engine: Engine, history, asks) -> None:  # noqa: ANN001
    clear(engine)
    record(engine, history)
    for start, length, every, which in asks:
        since = pd.Timestamp(T0 + start * MIN)
        until = since + pd.Timedelta(minutes=length)
        res = Resolution.parse(every)
        assert_same(*both_ways(engine, FILTERS[which], res, since, until))
        assert_same_trends(engine, FILTERS[which], until)


def assert_same_trends(engine: Engine, f: Filters, at: pd.Timestamp) -> None:
    got = read(engine, trends,  f, as_of=at.to_pydatetime())
    with engine.connect() as conn:  # every region: the same prices, from every raw interval
        regions = tuple(r for (r,) in conn.execute(text("SELECT DISTINCT region FROM offer")) if r is not None)
    want = read(engine, trends,  replace(f, regions=regions or ("r",)), as_of=at.to_pydatetime())
    assert got == want


# collections minutes to months apart, so that the trends' look-backs (24 h, 7 d, 30 d, 90 d)
# land on stored prices, on gaps and on prices held past their last observation
months = st.lists(
    st.tuples(st.sampled_from(sorted(PROVIDERS)), st.sampled_from((0, 20, 60, 1440, 10_080, 43_200, 129_600)),
              st.booleans(), listing),
    min_size=1, max_size=14,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=months, picks=st.lists(st.tuples(st.integers(0, 13), st.sampled_from(("0h", "24h", "7d", "30d", "90d")),
                                                st.sampled_from((0, 1, 30, 59, 61, 1439))), min_size=1, max_size=4),
       which=st.sampled_from(sorted(FILTERS)))
# a price that stopped holding 28 minutes before the 30-day window starts, on the window's first day
@example(history=[("daily", 0, False, [("a", "on_demand", "H100-SXM", 1.0)]),
                  ("half", 0, True, [("a", "on_demand", "A100-SXM-80GB", 1.0), ("b", "on_demand", "A100-SXM-80GB", 2.25)]),
                  ("half", 43200, True, [("b", "on_demand", "A100-SXM-80GB", 2.25)])],
         picks=[(0, "30d", 59)], which="all")
def test_trends_look_backs_equal_raw_answers_over_months(engine: Engine, history, picks, which) -> None:  # noqa: ANN001
    """As of moments a look-back period (plus a few minutes) after a collection: the current
    price, the prices 24 h / 7 d / 30 d / 90 d ago, the low and the volatility from the trends'
    bounded reads equal those from every raw interval."""
    clear(engine)
    end = record(engine, history)
    times, at = [], T0
    for _provider, minutes, _ok, _listed in history:
        at += minutes * MIN + MIN
        times.append(at)
    spans = {"0h": timedelta(0)} | PERIODS
    for k, span, minutes in picks:
        as_of = min(times[k % len(times)] + spans[span] + minutes * MIN, end + timedelta(days=1))
        assert_same_trends(engine, FILTERS[which], pd.Timestamp(as_of))


def test_whole_buckets_come_from_the_rollups(engine: Engine) -> None:
    """A range of whole days is answered by the roll-ups alone; a partial day needs raw intervals."""
    record(engine, [("hourly", 0, True, [("a", "on_demand", "H100-SXM", 2.0)]),
                    ("hourly", 59, True, [("a", "on_demand", "H100-SXM", 1.5)])])
    day = pd.Timestamp(T0)
    with engine_reader(engine) as reader:
        *_, source = provider_runs(reader, Filters(), Resolution.day, epoch(day), epoch(day + pd.Timedelta(days=2)) - 1, None)
        assert source == "rollups"
        *_, source = provider_runs(reader, Filters(), Resolution.day, epoch(day + pd.Timedelta(hours=5)),
                                   epoch(day + pd.Timedelta(days=2, hours=3)), None)
        assert source == "rollups+raw"
    got, want = both_ways(engine, Filters(), Resolution.hour, day, day + pd.Timedelta(hours=4))
    assert_same(got, want)
    assert list(got[0]["min"].dropna()) == [2.0, 1.5]


def test_rollup_answers_equal_raw_answers_on_the_bundled_recordings(engine: Engine, tmp_path: Path) -> None:
    """Every bundled recording replayed through the real pipeline twice, a day and an hour apart
    (a copy whose manifests say they were recorded then); history of every GPU at hour and day
    resolution, both ways."""
    replay_recordings_at(engine, tmp_path, (T0 + timedelta(minutes=7), T0 + timedelta(hours=25, minutes=7)))
    start = pd.Timestamp(T0)
    for res, since, until in [
        (Resolution.hour, start, start + pd.Timedelta(hours=30)),
        (Resolution.day, start, start + pd.Timedelta(days=2)),
        (Resolution.day, start + pd.Timedelta(minutes=30), start + pd.Timedelta(days=1, hours=2)),
        (Resolution.hour, start + pd.Timedelta(minutes=30), start + pd.Timedelta(hours=3, minutes=10)),
    ]:
        for f in (Filters(), Filters(kinds=None)):
            got, want = both_ways(engine, f, res, since, until)
            assert not want[0].empty
            assert_same(got, want)
    # trends read their long-range parts from the roll-ups too; same table as from raw intervals
    for f in (Filters(), Filters(kinds=None)):
        assert_same_trends(engine, f, pd.Timestamp(T0 + timedelta(hours=25, minutes=7)))
        assert_same_trends(engine, f, pd.Timestamp(T0 + timedelta(hours=24, minutes=30)))


@pytest.mark.parametrize("res", [Resolution.hour, Resolution.day])
def test_an_observation_whose_next_attempt_failed_in_the_same_second_still_counts(engine: Engine, res: Resolution) -> None:
    # Times are whole seconds: a collection that fails within the second of the one before it
    # gives an interval with first_seen == last_seen == ends_at. The price was observed at
    # that second, so a range starting there (a dashboard's range clipped to the first price)
    # must show it, from the raw path (partial bucket) and the roll-ups alike.
    clear(engine)
    at = T0 + timedelta(minutes=17, seconds=5)
    with session_scope(engine) as s:
        prov = labels.ensure_provider(s, "hourly")
        store_stage.store_observation(s, "hourly", [offer("hourly", "a", "on_demand", "H100-SXM", 2.0)], at, None,
                                      interval_s=PROVIDERS["hourly"])
        prov.last_attempt_at = at
    with session_scope(engine) as s:
        store_stage.record_failed_attempt(s, "hourly", at + timedelta(microseconds=400_000))
    since, until = pd.Timestamp(at), pd.Timestamp(at + timedelta(seconds=30))
    (market, by_provider), want = both_ways(engine, Filters(gpus=("H100-SXM",)), res, since, until)
    assert list(by_provider["provider"]) == ["hourly"] and list(by_provider["value"]) == [2.0]
    assert_same((market, by_provider), want)
