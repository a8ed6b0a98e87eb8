"""Break-even and total cost of ownership: buy a GPU or rent one by the hour.

The seed article's model, generalised (all money in USD):

* electricity per year = TDP (kW) x utilisation x 8,760 h x price per kWh
  (700 W at 60% and 0.10/kWh: 0.7 x 0.6 x 8,760 x 0.10 = 367.92, "about 368 a year");
* running cost per hour of use = TDP (kW) x price per kWh + cooling + maintenance
  (the article's H100: 0.07 electricity + 0.02 cooling);
* effective ownership cost per hour over N years = purchase / (N x 8,760) + running cost
  (the H100: 25,000 / 26,280 + 0.07 + 0.02 = 1.041, the article's "about 1.05");
  ``effective_hourly_cost_at_utilization`` spreads the purchase over the hours actually used;
* break-even hours (simple, the article's) = purchase / rent: 25,000 / 3.15 = 7,937 h;
  the *full* version subtracts what owning costs to run from the rent you save:
  purchase / (rent - running cost) = 25,000 / 3.06 = 8,170 h;
* months to break even = hours / (730 x utilisation): 7,937 h is 10.9 months at 24/7
  ("about 11") and 18.1 months at 60% ("about 18").

The rent defaults to the current market price from the store (:func:`market_rent`: the
cheapest provider, or the median provider, for the GPU), and ``rent_source`` says which
price from which offer and when, so break-even can be tracked as rents move.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from db.reader import Reader
from db.reads import latest_prices
from tracker.analysis.aggregators import cheapest_per_provider
from tracker.analysis.assumptions import RENT_BASES, USD_PER_KWH, UTILIZATION, YEARS
from tracker.analysis.specs import Catalog
from tracker.catalog.value import breakeven_hours, months_for_hours
from tracker.kinds import DEFAULT_KINDS, HOURS_PER_MONTH
from tracker.errors import ConfigError

#: 8,760: twelve billing months (``tracker.kinds.HOURS_PER_MONTH``), a 365-day year.
HOURS_PER_YEAR = 12 * HOURS_PER_MONTH


def electricity_per_year(tdp_w: float, utilization: float, usd_per_kwh: float) -> float:
    """TDP (kW) x utilisation x 8,760 h x USD/kWh."""
    return tdp_w / 1000.0 * utilization * HOURS_PER_YEAR * usd_per_kwh


def electricity_per_hour(tdp_w: float, usd_per_kwh: float) -> float:
    """What an hour of use at full board power costs: TDP (kW) x USD/kWh."""
    return tdp_w / 1000.0 * usd_per_kwh


#: Upper bounds of the inputs: far beyond any real GPU, low enough that no sum overflows.
MAX_YEARS = 100.0
MAX_PURCHASE = 1e9
MAX_RENT = 1e6
MAX_RUNNING = 1e6


def effective_hourly_cost(purchase: float, years: float, running_per_hour: float, utilization: float = 1.0) -> float:
    """Owning, per hour of use: purchase / (years x 8,760 x utilisation) + running cost."""
    return purchase / (years * HOURS_PER_YEAR * utilization) + running_per_hour


def breakeven_hours_full(purchase: float, rent_per_hour: float, running_per_hour: float) -> float | None:
    """Full break-even: the purchase divided by what each hour of owning saves over renting.
    ``None`` when running the card costs as much as renting it (it never pays off)."""
    saving = rent_per_hour - running_per_hour
    return purchase / saving if saving > 0 else None


@dataclass(frozen=True, slots=True)
class RentQuote:
    """A market rent for one GPU, and where it came from."""

    rate: float
    basis: str  # cheapest | median
    gpu: str
    observed_at: datetime
    providers: int
    offers: int
    provider: str | None = None
    region: str | None = None
    sku: str | None = None
    kind: str | None = None

    @property
    def source(self) -> str:
        when = self.observed_at.strftime("%Y-%m-%d %H:%M UTC")
        if self.basis == "cheapest":
            return (f"market cheapest {self.gpu} on {when}: {self.provider} {self.sku}"
                    f"{f' ({self.region})' if self.region else ''}, {self.kind}, {self.rate:.4g} USD/GPU-h")
        return (f"market median {self.gpu} on {when}: median of the cheapest offer of each of {self.providers} "
                f"providers ({self.offers} offers), {self.rate:.4g} USD/GPU-h")


def market_rent(
    reader: Reader,
    gpu: str,
    basis: str = "cheapest",
    *,
    kinds: Sequence[str] | None = DEFAULT_KINDS,
    providers: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    at: datetime | None = None,
    include_stale: bool = False,
) -> RentQuote | None:
    """The current USD per GPU-hour for ``gpu`` from the latest successful scrapes
    (what ``gpu-tracker prices`` shows), or as of ``at``: the cheapest provider or the median provider."""
    if basis not in RENT_BASES:
        raise ConfigError(f"--rent-basis: {basis!r} is not one of {', '.join(RENT_BASES)}")
    rows = latest_prices(reader, at=at, gpus=[gpu], providers=providers, kinds=kinds, regions=regions,
                         include_stale=include_stale)
    rows = [r for r in rows if r["currency"] == "USD" and r["price_per_gpu_hour"]]
    if not rows:
        return None
    per_provider = cheapest_per_provider(rows)  # already cheapest first; an aggregator's row for a cloud is the cloud's
    if basis == "cheapest":
        best = rows[0]
        return RentQuote(best["price_per_gpu_hour"], basis, gpu, best["observed_at"], len(per_provider), len(rows),
                         best["provider"], best["region"], best["sku"], best["kind"])
    rate = statistics.median(r["price_per_gpu_hour"] for r in per_provider.values())
    latest = max(r["observed_at"] for r in per_provider.values())
    return RentQuote(rate, basis, gpu, latest, len(per_provider), len(rows))


@dataclass(frozen=True, slots=True)
class TcoResult:
    gpu: str | None
    purchase: float
    purchase_source: str
    rent: float
    rent_source: str
    rent_observed_at: datetime | None
    tdp_w: float | None
    utilization: float
    usd_per_kwh: float
    years: float
    electricity_per_hour: float
    electricity_per_year: float
    cooling_per_hour: float
    maintenance_per_hour: float
    running_cost_per_hour: float
    effective_hourly_cost: float
    effective_hourly_cost_at_utilization: float
    breakeven_hours: float
    breakeven_months_24_7: float
    breakeven_months_at_utilization: float
    breakeven_hours_full: float | None
    breakeven_months_24_7_full: float | None
    breakeven_months_at_utilization_full: float | None
    rent_cost_over_years: float
    own_cost_over_years: float
    cheaper_over_years: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def tco(
    *,
    purchase: float,
    rent: float,
    tdp_w: float | None = None,
    utilization: float = UTILIZATION,
    usd_per_kwh: float = USD_PER_KWH,
    years: float = YEARS,
    cooling_per_hour: float = 0.0,
    maintenance_per_hour: float = 0.0,
    gpu: str | None = None,
    purchase_source: str = "user",
    rent_source: str = "user",
    rent_observed_at: datetime | None = None,
) -> TcoResult:
    """Every number of the model for one GPU (see the module docstring); without a TDP,
    electricity counts as zero."""
    bounded = (("purchase", purchase, MAX_PURCHASE), ("rent", rent, MAX_RENT), ("years", years, MAX_YEARS))
    for name, value, _top in bounded:
        if not value or value <= 0 or math.isnan(value):
            raise ConfigError(f"--{name}: {value} must be a positive number")
    for name, value, top in bounded:  # beyond these the sums overflow to Infinity
        if value > top:
            raise ConfigError(f"--{name}: {value:g} is more than {top:g}")
    if not 0 < utilization <= 1:
        raise ConfigError(f"--utilization: {utilization} must be in (0, 1]")
    for name, value in (("kwh", usd_per_kwh), ("cooling", cooling_per_hour), ("maintenance", maintenance_per_hour)):
        if not 0 <= value <= MAX_RUNNING:
            raise ConfigError(f"--{name}: {value:g} must be between 0 and {MAX_RUNNING:g}")
    if tdp_w:
        elec_hour = electricity_per_hour(tdp_w, usd_per_kwh)
        elec_year = electricity_per_year(tdp_w, utilization, usd_per_kwh)
    else:
        elec_hour = elec_year = 0.0
    running = elec_hour + cooling_per_hour + maintenance_per_hour
    simple = breakeven_hours(purchase, rent)
    full = breakeven_hours_full(purchase, rent, running)
    used_hours = years * HOURS_PER_YEAR * utilization
    rent_total = rent * used_hours
    own_total = purchase + running * used_hours
    return TcoResult(
        gpu=gpu, purchase=purchase, purchase_source=purchase_source, rent=rent, rent_source=rent_source,
        rent_observed_at=rent_observed_at, tdp_w=tdp_w, utilization=utilization, usd_per_kwh=usd_per_kwh,
        years=years, electricity_per_hour=elec_hour, electricity_per_year=elec_year,
        cooling_per_hour=cooling_per_hour, maintenance_per_hour=maintenance_per_hour, running_cost_per_hour=running,
        effective_hourly_cost=effective_hourly_cost(purchase, years, running),
        effective_hourly_cost_at_utilization=effective_hourly_cost(purchase, years, running, utilization),
        breakeven_hours=simple,
        breakeven_months_24_7=months_for_hours(simple),
        breakeven_months_at_utilization=months_for_hours(simple, utilization),
        breakeven_hours_full=full,
        breakeven_months_24_7_full=months_for_hours(full),
        breakeven_months_at_utilization_full=months_for_hours(full, utilization),
        rent_cost_over_years=rent_total,
        own_cost_over_years=own_total,
        cheaper_over_years="buy" if own_total < rent_total else "rent",
    )


def tco_for_gpu(
    reader: Reader,
    catalog: Catalog,
    gpu: str | None,
    *,
    purchase: float | None = None,
    rent: float | None = None,
    rent_basis: str = "cheapest",
    tdp_w: float | None = None,
    kinds: Sequence[str] | None = DEFAULT_KINDS,
    providers: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    at: datetime | None = None,
    include_stale: bool = False,
    **model: Any,
) -> TcoResult:
    """``tco`` with the gaps filled the way users expect, shared by the CLI and the API: the
    purchase price and TDP from the catalog, the rent from today's market (``rent_basis``),
    each with its source. ``gpu`` is a canonical id (the caller resolves families)."""
    spec = catalog.get(gpu) if gpu else None
    purchase_source = "user"
    if purchase is None:
        if spec is None or not spec.purchase_price_usd:
            raise ConfigError(f"tco: no purchase price in the catalog for {gpu or 'this GPU'}; pass --purchase")
        purchase = float(spec.purchase_price_usd)
        purchase_source = f"catalog ({spec.purchase_price_date or 'undated'}: {spec.purchase_price_source or 'no source'})"
    rent_source, rent_at = "user", None
    if rent is None:
        if gpu is None:
            raise ConfigError("tco: pass --gpu (for the market rent) or --rent")
        quote = market_rent(reader, gpu, rent_basis, kinds=kinds, providers=providers, regions=regions, at=at,
                            include_stale=include_stale)
        if quote is None:
            if at is not None:
                raise ConfigError(f"tco: no {gpu} price in effect at {at:%Y-%m-%d %H:%M} UTC; pass --rent or another --at")
            raise ConfigError(f"tco: no current {gpu} price in the store; run `gpu-tracker scrape`, pass --rent, "
                              "ask about a past moment with --at, or use the last (stale) prices with --include-stale")
        rent, rent_source, rent_at = quote.rate, quote.source, quote.observed_at
    return tco(purchase=purchase, rent=rent, tdp_w=tdp_w if tdp_w is not None else spec.tdp_w if spec else None,
               gpu=gpu, purchase_source=purchase_source, rent_source=rent_source, rent_observed_at=rent_at, **model)


def electricity_table() -> pd.DataFrame:
    """Electricity cost per year for common TDPs, utilisations and prices (the article's table, generalised)."""
    rows = [
        {"tdp_w": w, "utilization": u, "usd_per_kwh": k, "kwh_per_year": electricity_per_year(w, u, 1.0),
         "usd_per_year": electricity_per_year(w, u, k)}
        for w in (300, 450, 700, 1000) for u in (0.3, 0.6, 1.0) for k in (0.10, 0.15, 0.25)
    ]
    return pd.DataFrame(rows)
