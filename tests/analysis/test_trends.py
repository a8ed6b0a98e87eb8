"""Trends on a 100-day stored sequence with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy.engine import Engine

from tests.analysis.seq import DAY, HOUR, T0, offer, scrape
from tests.conftest import read
from tracker.analysis.grid import Filters
from tracker.analysis.trends import (
    TREND_COLUMNS,
    is_good_deal,
    newest_observation,
    trends,
    volatility,
)

H100 = Filters.of(gpus=["H100-SXM"])


def store_hundred_days(engine: Engine) -> None:
    """Daily scrapes, days 0-100 (H100-SXM, USD per GPU-hour).

    p1: 3.00 (days 0-39), 2.40 (40-69), 2.00 (70-79, the all-time low), 2.60 (80-100).
    p2: 2.90, an outage on days 90-94 (its scrapes fail), back at 2.95 on day 95.
    """
    for d in range(101):
        price = 3.0 if d < 40 else 2.4 if d < 70 else 2.0 if d < 80 else 2.6
        scrape(engine, "p1", T0 + d * DAY, offer("p1", "x", price))
        if not 90 <= d <= 94:
            scrape(engine, "p2", T0 + d * DAY, offer("p2", "y", 2.9 if d < 90 else 2.95))


@pytest.fixture
def hundred_days(engine: Engine) -> Engine:
    store_hundred_days(engine)
    return engine


def row(rows: list[dict], gpu: str = "H100-SXM") -> dict:  # type: ignore[type-arg]
    return next(r for r in rows if r["gpu"] == gpu)


def test_changes_low_and_deal_at_the_end(hundred_days: Engine) -> None:
    t = row(read(hundred_days, trends, H100, as_of=read(hundred_days, newest_observation), tolerance=DAY))
    assert t["as_of"] == T0 + 100 * DAY  # the newest observation
    assert t["current"] == pytest.approx(2.6) and t["provider"] == "p1" and t["providers"] == 2
    assert t["price_24h_ago"] == pytest.approx(2.6) and t["change_24h_pct"] == pytest.approx(0.0)
    # seven days ago p2 was in its outage: the market was p1 alone
    assert t["price_7d_ago"] == pytest.approx(2.6) and t["change_7d_pct"] == pytest.approx(0.0)
    assert t["price_30d_ago"] == pytest.approx(2.0) and t["change_30d_pct"] == pytest.approx(30.0)
    assert t["price_90d_ago"] == pytest.approx(2.9) and t["change_90d_pct"] == pytest.approx((2.6 - 2.9) / 2.9 * 100)
    assert t["all_time_low"] == pytest.approx(2.0)
    assert t["all_time_low_at"] == T0 + 70 * DAY and t["all_time_low_provider"] == "p1"
    assert t["good_deal"] is False  # 2.60 is 30% above the low


def test_a_new_all_time_low_is_a_good_deal(hundred_days: Engine) -> None:
    t = row(read(hundred_days, trends, H100, as_of=T0 + 75 * DAY, tolerance=DAY))
    assert t["current"] == pytest.approx(2.0)
    assert t["all_time_low"] == pytest.approx(2.0) and t["all_time_low_at"] == T0 + 70 * DAY
    assert t["good_deal"] is True
    assert t["change_7d_pct"] == pytest.approx((2.0 - 2.4) / 2.4 * 100)
    # before the drop, the low was still 2.40 (later data is not looked at)
    before = row(read(hundred_days, trends, H100, as_of=T0 + 60 * DAY, tolerance=DAY))
    assert before["all_time_low"] == pytest.approx(2.4) and before["good_deal"] is True
    assert before["price_90d_ago"] is None and before["change_90d_pct"] is None  # before the history began


def test_volatility_of_daily_lows(hundred_days: Engine) -> None:
    t = row(read(hundred_days, trends, H100, as_of=read(hundred_days, newest_observation), tolerance=DAY))
    # daily lows over days 70-100: 2.0 x10, then 2.6 x21 -> one +30% change among 30
    changes = np.array([0.3] + [0.0] * 29)
    assert t["volatility_30d_pct"] == pytest.approx(changes.std(ddof=1) * 100)


def test_outage_leaves_no_price_when_the_provider_alone_is_out(engine: Engine) -> None:
    for d in range(10):
        if d not in (4, 5):
            scrape(engine, "solo", T0 + d * DAY, offer("solo", "s", 2.0 if d < 4 else 1.8))
    assert row(read(engine, trends,  H100, as_of=T0 + 4 * DAY, tolerance=DAY))["current"] is None  # nothing is carried over the outage
    t = row(read(engine, trends,  H100, as_of=T0 + 9 * DAY, tolerance=DAY))
    assert t["price_24h_ago"] == pytest.approx(1.8)


def test_stale_providers_do_not_count_as_current(engine: Engine) -> None:
    scrape(engine, "old", T0, offer("old", "o", 1.0))
    scrape(engine, "new", T0 + 3 * DAY, offer("new", "n", 2.0))
    t = row(read(engine, trends,  H100, as_of=read(engine, newest_observation), tolerance=DAY))
    assert t["current"] == pytest.approx(2.0) and t["provider"] == "new"
    assert t["all_time_low"] == pytest.approx(1.0) and t["good_deal"] is False


def test_every_gpu_gets_a_row_and_empty_store_gives_none(engine: Engine) -> None:
    assert read(engine, trends) == []
    scrape(engine, "p", T0, offer("p", "a", 2.0), offer("p", "b", 0.4, gpu="RTX-4090"))
    assert [r["gpu"] for r in read(engine, trends,  as_of=read(engine, newest_observation))] == ["H100-SXM", "RTX-4090"]
    assert all(list(r) == TREND_COLUMNS for r in read(engine, trends,  as_of=read(engine, newest_observation)))


def test_good_deal_boundary_and_volatility_edges() -> None:
    assert is_good_deal(2.10, 2.0) and not is_good_deal(2.11, 2.0) and not is_good_deal(None, 2.0)
    import pandas as pd

    assert volatility(pd.Series([2.0, 2.0])) is None  # one change is not a spread
    assert volatility(pd.Series([2.0, float("nan"), 2.2, 2.2])) is None  # the gap breaks the chain


def store_days(engine: Engine, days: int, price: float = 2.0) -> None:
    for d in range(days):
        scrape(engine, "p1", T0 + d * DAY, offer("p1", "x", price))


@pytest.mark.parametrize(("days", "deal"), [(1, False), (6, False), (7, True)])
def test_good_deal_needs_seven_days_of_observations(engine: Engine, days: int, deal: bool) -> None:
    """At its all-time low every day, but only a week of history makes it a good deal (both read paths:
    the day roll-ups, and every raw interval, which a region filter makes the trends read)."""
    store_days(engine, days)
    t = row(read(engine, trends,  H100, as_of=read(engine, newest_observation), tolerance=DAY))
    assert t["current"] == pytest.approx(t["all_time_low"])
    assert t["history_days"] == days and t["good_deal"] is deal
    raw = row(read(engine, trends,  Filters.of(gpus=["H100-SXM"], regions=["r1"]), as_of=read(engine, newest_observation), tolerance=DAY))
    assert raw["history_days"] == days and raw["good_deal"] is deal


def test_an_offer_counts_its_newest_price_where_an_older_one_still_holds(engine: Engine) -> None:
    """The price a period ago counts each offer's newest interval in effect then: p1's cheaper
    old price, still held then (no next attempt stored, a two-day tolerance), is not its price
    once a newer one began; the lowest is p2's."""
    for d in range(8):
        scrape(engine, "p1", T0 + d * DAY, offer("p1", "x", 1.0 if d < 5 else 3.0))
        scrape(engine, "p2", T0 + d * DAY, offer("p2", "y", 2.0))
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE price_interval_past SET ends_at = NULL")
    t = row(read(engine, trends, H100, as_of=T0 + 6 * DAY + 12 * HOUR, tolerance=2 * DAY))
    assert t["price_24h_ago"] == pytest.approx(2.0)  # p1: 3.0 from day 5, its 1.0 held to day 6
    assert t["price_7d_ago"] is None
