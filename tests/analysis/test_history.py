"""Price history on a stored sequence with known answers: a drop, gaps, a provider outage and a
new all-time low; hour/day/week grids; cost-per-TFLOP and break-even series."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from sqlalchemy.engine import Engine

from tests.analysis.seq import DAY, HOUR, T0, offer, scrape
from tests.conftest import read
from tracker.analysis.grid import Filters, Resolution, parse_span
from tracker.analysis.history import (
    History,
    breakeven_history,
    cost_per_tflop_history,
    history,
    price_history,
)
from tracker.catalog.specs import load_catalog
from tracker.errors import ConfigError

H100 = Filters.of(gpus=["H100-SXM"])
NAN = float("nan")


def store_day_one(engine: Engine) -> None:
    """Hourly scrapes, 00:00-11:00 on day one (H100-SXM, USD per GPU-hour).

    alpha: 3.00 until 05:00, then 2.50 (a drop at 06:00).
    beta:  2.80; its scrapes fail at 03:00 and 04:00 (outage) and it comes back at 2.70.
    gamma: first listed at 08:00 at 2.00 (a new all-time low).
    delta: 2.90, missing from its own successful scrapes at 02:00-03:00 (delisted), back at 04:00.
    An 8-GPU alpha offer at 3.10/GPU-h sits above alpha's 1-GPU price all along.
    """
    for h in range(12):
        at = T0 + h * HOUR
        scrape(engine, "alpha", at, offer("alpha", "a1", 3.0 if h < 6 else 2.5), offer("alpha", "a8", 3.10, count=8))
        if h not in (3, 4):
            scrape(engine, "beta", at, offer("beta", "b1", 2.8 if h < 3 else 2.7))
        if h >= 8:
            scrape(engine, "gamma", at, offer("gamma", "g1", 2.0))
        delta = [offer("delta", "d1", 2.9)] if h not in (2, 3) else []
        scrape(engine, "delta", at, *delta, offer("delta", "d2", 1.2, gpu="A100-SXM-80GB"))


#: hour -> (alpha, beta, gamma, delta)
EXPECTED = {
    0: (3.0, 2.8, NAN, 2.9), 1: (3.0, 2.8, NAN, 2.9), 2: (3.0, 2.8, NAN, NAN), 3: (3.0, NAN, NAN, NAN),
    4: (3.0, NAN, NAN, 2.9), 5: (3.0, 2.7, NAN, 2.9), 6: (2.5, 2.7, NAN, 2.9), 7: (2.5, 2.7, NAN, 2.9),
    **{h: (2.5, 2.7, 2.0, 2.9) for h in range(8, 12)},
}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b)


def gaps(h: History, provider: str) -> list[bool]:
    """Where one provider's H100-SXM line on the full grid has no value."""
    return [v is None for v in h.provider_columns("H100-SXM")["H100-SXM"][provider]]


def test_hourly_history_has_known_answers(engine: Engine) -> None:
    store_day_one(engine)
    h = read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="hour")
    wide = h.wide().set_index("time")
    assert list(wide.index) == [pd.Timestamp(T0 + i * HOUR) for i in range(12)]
    for hour, values in EXPECTED.items():
        row = wide.loc[pd.Timestamp(T0 + hour * HOUR)]
        got = tuple(float(row[p]) for p in ("alpha", "beta", "gamma", "delta"))
        assert all(same(g, e) for g, e in zip(got, values, strict=True)), (hour, got, values)
        present = sorted(v for v in values if not math.isnan(v))
        assert row["min"] == pytest.approx(present[0])
        assert row["median"] == pytest.approx(pd.Series(present).median())
        assert row["p25"] == pytest.approx(pd.Series(present).quantile(0.25))
        assert row["providers"] == len(present)
    # spot checks written out by hand
    at8 = wide.loc[pd.Timestamp(T0 + 8 * HOUR)]
    assert (at8["min"], at8["p25"], at8["median"]) == pytest.approx((2.0, 2.375, 2.6))
    assert wide.loc[pd.Timestamp(T0 + 6 * HOUR), "min"] == pytest.approx(2.5)  # the drop
    assert wide.loc[pd.Timestamp(T0 + 3 * HOUR), "providers"] == 1  # beta's outage and delta's delisting
    assert wide.loc[pd.Timestamp(T0), "offers"] == 4  # alpha's two offers, beta, delta


def test_gaps_are_never_forward_filled(engine: Engine) -> None:
    store_day_one(engine)
    h = read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="hour")
    assert gaps(h, "beta") == [False, False, False, True, True] + [False] * 7
    assert gaps(h, "delta") == [False, False, True, True] + [False] * 8
    # the by-provider frame has no rows at all for the gaps
    rows = h.by_provider[h.by_provider["provider"] == "beta"]
    assert pd.Timestamp(T0 + 3 * HOUR) not in set(rows["time"])


def test_a_day_without_data_is_an_empty_bucket(engine: Engine) -> None:
    store_day_one(engine)
    # tracker down on day two; day three scraped once
    scrape(engine, "alpha", T0 + 2 * DAY, offer("alpha", "a1", 2.4))
    h = read(engine, price_history,  H100, since=T0, until=T0 + 2 * DAY + HOUR, resolution="day")
    m = h.market.set_index("time")
    assert list(m.index) == [pd.Timestamp(T0 + i * DAY) for i in range(3)]
    assert m.loc[pd.Timestamp(T0), "min"] == pytest.approx(2.0)  # the day's lowest: gamma's new low
    assert m.loc[pd.Timestamp(T0), "median"] == pytest.approx(2.6)  # alpha 2.5, beta 2.7, gamma 2.0, delta 2.9
    assert math.isnan(m.loc[pd.Timestamp(T0 + DAY), "min"]) and m.loc[pd.Timestamp(T0 + DAY), "providers"] == 0
    assert m.loc[pd.Timestamp(T0 + 2 * DAY), "min"] == pytest.approx(2.4)


def test_weekly_buckets_start_on_monday(engine: Engine) -> None:
    store_day_one(engine)  # 2026-01-01 is a Thursday
    h = read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="week")
    assert list(h.market["time"]) == [pd.Timestamp("2025-12-29", tz="UTC")]
    assert float(h.market["min"].iloc[0]) == pytest.approx(2.0)


def test_tolerance_is_the_scrape_interval(engine: Engine) -> None:
    # a 6-hourly scraper: one observation covers the next six hourly buckets, not seven
    scrape(engine, "slow", T0, offer("slow", "s1", 2.2))
    h = read(engine, price_history,  H100, since=T0, until=T0 + 8 * HOUR, resolution="hour",
                      tolerance={"slow": 6 * HOUR})
    assert [not gap for gap in gaps(h, "slow")] == [True] * 6 + [False] * 3


def test_price_change_inside_the_tolerance_window_counts_once_per_offer(engine: Engine) -> None:
    scrape(engine, "p", T0, offer("p", "x", 3.0))
    scrape(engine, "p", T0 + HOUR / 2, offer("p", "x", 2.0))  # 30 minutes later
    h = read(engine, price_history,  H100, since=T0, until=T0 + HOUR / 2, resolution="hour")
    # both were in effect during the hour: the offer counts once, and the min wins
    assert h.market["offers"].tolist() == [1] and h.market["min"].tolist() == [2.0]


def test_filters_kinds_regions_and_currency(engine: Engine) -> None:
    scrape(engine, "p", T0, offer("p", "od", 3.0), offer("p", "sp", 1.0, kind="spot"),
           offer("p", "eu", 2.5, region="eu"), offer("p", "eur", 0.5, currency="EUR"))
    default = read(engine, price_history,  H100, since=T0, until=T0, resolution="hour")
    assert float(default.market["min"].iloc[0]) == 2.5  # spot excluded by default, EUR never mixed in
    spot = read(engine, price_history,  Filters.of(gpus=["H100-SXM"], kinds=["spot"]), since=T0, until=T0, resolution="hour")
    assert float(spot.market["min"].iloc[0]) == 1.0
    region = read(engine, price_history,  Filters.of(gpus=["H100-SXM"], regions=["r1"]), since=T0, until=T0, resolution="hour")
    assert float(region.market["min"].iloc[0]) == 3.0


def test_cost_per_tflop_and_breakeven_series(engine: Engine) -> None:
    store_day_one(engine)
    h = read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="hour")
    cat = load_catalog()
    tflops = cat["H100-SXM"].fp16_dense_tflops
    purchase = cat["H100-SXM"].purchase_price_usd
    cpt = cost_per_tflop_history(h)
    assert cpt.unit == "USD/TFLOP-h (fp16-dense)"
    last = cpt.market.iloc[-1]
    assert last["min"] == pytest.approx(2.0 / tflops)
    be = breakeven_history(h)
    assert be.market.iloc[-1]["min"] == pytest.approx(purchase / (2.0 * 730))
    assert be.market.iloc[0]["min"] == pytest.approx(purchase / (2.8 * 730))
    # gaps stay gaps in derived series too
    assert gaps(be, "beta")[3]
    # the convenience wrapper gives the same
    again = read(engine, history,  H100, metric="cost-per-tflop", since=T0, until=T0 + 11 * HOUR, resolution="hour")
    assert again.market["min"].tolist() == pytest.approx(cpt.market["min"].tolist())


def test_family_query_gives_one_series_per_variant(engine: Engine) -> None:
    scrape(engine, "p", T0, offer("p", "sxm", 2.5), offer("p", "pcie", 2.0, gpu="H100-PCIe"))
    h = read(engine, price_history,  Filters.of(gpus=["H100-SXM", "H100-PCIe", "H100-NVL"]), since=T0, until=T0,
                      resolution="hour")
    assert h.gpus == ["H100-PCIe", "H100-SXM"]
    assert h.notes == []


def test_no_data_is_an_empty_history_with_a_note(engine: Engine) -> None:
    h = read(engine, price_history,  H100, since=T0, until=T0 + DAY)
    assert h.market.empty and h.rows() == [] and h.notes


def test_bad_inputs_are_config_errors(engine: Engine) -> None:
    with pytest.raises(ConfigError, match="--every"):
        Resolution.parse("fortnight")
    with pytest.raises(ConfigError, match="--metric"):
        read(engine, history,  H100, metric="vibes")
    with pytest.raises(ConfigError, match="after"):
        read(engine, price_history,  H100, since=T0 + DAY, until=T0)
    assert parse_span("90d") == 90 * DAY and parse_span("12h") == 12 * HOUR and parse_span("2w") == 14 * DAY
    with pytest.raises(ConfigError):
        parse_span("soon")
