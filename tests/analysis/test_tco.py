"""Break-even and TCO: the seed article's numbers, the full break-even, and market rents."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from tests.analysis.seq import HOUR, T0, offer, scrape
from tests.conftest import read
from tracker.analysis.tco import (
    breakeven_hours,
    breakeven_hours_full,
    effective_hourly_cost,
    electricity_per_year,
    electricity_table,
    market_rent,
    months_for_hours,
    tco,
)
from tracker.errors import ConfigError

# The article's H100: purchase 25,000, rent 3.15/h, electricity 0.07/h (700 W at 0.10/kWh), cooling 0.02/h.
ARTICLE = dict(purchase=25_000, rent=3.15, tdp_w=700, usd_per_kwh=0.10, cooling_per_hour=0.02, utilization=0.6, years=3)


def test_article_numbers() -> None:
    r = tco(**ARTICLE)
    assert round(r.breakeven_hours) == 7937
    assert round(r.breakeven_months_24_7) == 11 and r.breakeven_months_24_7 == pytest.approx(10.87, abs=0.01)
    assert round(r.breakeven_months_at_utilization) == 18 and r.breakeven_months_at_utilization == pytest.approx(18.12, abs=0.01)
    assert r.electricity_per_hour == pytest.approx(0.07)
    # 25,000 / 26,280 + 0.07 + 0.02 = 1.0413: the article rounds this to "about 1.05"
    assert r.effective_hourly_cost == pytest.approx(25_000 / 26_280 + 0.09)
    assert r.effective_hourly_cost == pytest.approx(1.05, abs=0.01)
    assert r.electricity_per_year == pytest.approx(367.92)
    assert round(r.electricity_per_year) == 368


def test_electricity_table() -> None:
    assert electricity_per_year(700, 0.6, 0.10) == pytest.approx(367.92)
    assert electricity_per_year(700, 1.0, 0.10) == pytest.approx(613.2)
    table = electricity_table()
    row = table[(table.tdp_w == 700) & (table.utilization == 0.6) & (table.usd_per_kwh == 0.10)].iloc[0]
    assert round(row["usd_per_year"]) == 368 and row["kwh_per_year"] == pytest.approx(3679.2)


def test_full_breakeven_subtracts_running_costs() -> None:
    r = tco(**ARTICLE)
    assert r.running_cost_per_hour == pytest.approx(0.09)
    assert r.breakeven_hours_full == pytest.approx(25_000 / 3.06)
    assert r.breakeven_months_at_utilization_full == pytest.approx(25_000 / 3.06 / (730 * 0.6))
    assert breakeven_hours_full(1000, 0.05, 0.06) is None  # running costs more than renting: never
    assert breakeven_hours(25_000, 3.15) == pytest.approx(7936.5, abs=0.1)
    assert months_for_hours(7300, 0.5) == pytest.approx(20.0)
    assert effective_hourly_cost(26_280, 3, 0.0, utilization=0.5) == pytest.approx(2.0)


def test_horizon_comparison() -> None:
    r = tco(**ARTICLE)
    used = 3 * 8760 * 0.6
    assert r.rent_cost_over_years == pytest.approx(3.15 * used)
    assert r.own_cost_over_years == pytest.approx(25_000 + 0.09 * used)
    assert r.cheaper_over_years == "buy"
    assert tco(purchase=25_000, rent=0.5, utilization=0.1).cheaper_over_years == "rent"


def test_bad_inputs() -> None:
    with pytest.raises(ConfigError, match="--utilization"):
        tco(purchase=1, rent=1, utilization=1.5)
    with pytest.raises(ConfigError, match="--rent"):
        tco(purchase=1, rent=0)
    with pytest.raises(ConfigError, match="--kwh"):
        tco(purchase=1, rent=1, usd_per_kwh=-1)


def test_market_rent_cheapest_and_median(engine: Engine) -> None:
    scrape(engine, "a", T0, offer("a", "a1", 3.0), offer("a", "a2", 2.5))
    scrape(engine, "b", T0 + HOUR, offer("b", "b1", 2.8), offer("b", "b-spot", 1.0, kind="spot"))
    scrape(engine, "c", T0 + 2 * HOUR, offer("c", "c1", 3.4))
    cheapest = read(engine, market_rent, "H100-SXM", include_stale=True)
    assert cheapest is not None
    assert (cheapest.rate, cheapest.provider, cheapest.sku, cheapest.observed_at) == (2.5, "a", "a2", T0)
    assert "a a2" in cheapest.source and "2026-01-01 00:00 UTC" in cheapest.source
    median = read(engine, market_rent, "H100-SXM", "median", include_stale=True)
    assert median is not None and median.rate == pytest.approx(2.8)  # of a 2.5, b 2.8, c 3.4
    assert median.observed_at == T0 + 2 * HOUR and "3 providers" in median.source
    assert read(engine, market_rent, "H100-SXM", kinds=["spot"], include_stale=True).rate == 1.0  # type: ignore[union-attr]
    assert read(engine, market_rent, "A100-SXM-80GB", include_stale=True) is None
    with pytest.raises(ConfigError, match="--rent-basis"):
        read(engine, market_rent, "H100-SXM", "mean")


def test_market_rent_follows_the_market(engine: Engine) -> None:
    """Break-even is tracked over time: a new scrape with a lower rent moves it."""
    scrape(engine, "a", T0, offer("a", "a1", 3.15))
    first = read(engine, market_rent, "H100-SXM", include_stale=True)
    scrape(engine, "a", T0 + HOUR, offer("a", "a1", 2.50))
    second = read(engine, market_rent, "H100-SXM", include_stale=True)
    assert first is not None and second is not None
    assert tco(purchase=25_000, rent=first.rate).breakeven_hours < tco(purchase=25_000, rent=second.rate).breakeven_hours
    assert second.observed_at == T0 + HOUR


def test_the_cli_offers_the_shared_tco_defaults() -> None:
    """The CLI's tco options default to the values tco itself assumes (one declaration)."""
    import inspect

    from tracker.analysis import assumptions
    from tracker.cli.analysis_cmds import tco as tco_command

    defaults = {n: p.default for n, p in inspect.signature(tco_command).parameters.items()}
    assert (defaults["utilization"], defaults["kwh"], defaults["years"]) == (
        assumptions.UTILIZATION, assumptions.USD_PER_KWH, assumptions.YEARS)
    assert defaults["rent_basis"] in assumptions.RENT_BASES
