"""Analysis commands: history, trends, tco, recommend, plot (import: ``import_cmds``). Presentation only: the
numbers come from ``tracker.analysis``, imported inside each command (it brings pandas)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tracker.analysis.assumptions import MAX_GPUS, RENT_BASES, USD_PER_KWH, UTILIZATION, WORKLOADS, YEARS
from tracker.analysis.grid import METRICS as HISTORY_METRICS
from tracker.catalog import value as catalog_value
from tracker.cli import app
from tracker.cli.collect_cmds import resolve_gpu_query
from tracker.cli.common import (
    Format,
    State,
    collector_paused,
    console,
    emit,
    err_console,
    finite,
    key_values,
    print_notes,
    state,
)
from tracker.cli.options import (
    KIND_HELP,
    ColumnsOption,
    FormatOption,
    KindsOption,
    MaxAgeOption,
    MaxPriceOption,
    ProvidersOption,
    RegionsOption,
    WideOption,
    check_providers,
    chosen_kinds,
    narrow_offers,
)
from tracker.cli.render import ESSENTIAL
from tracker.cli.timetravel import AtOption, StaleOption, parse_at, warn_if_stale
from tracker.errors import ConfigError

if TYPE_CHECKING:
    from tracker.analysis import specs
    from tracker.analysis.grid import Filters

GPU_HELP = "A family (H100 = every H100 variant) or a canonical id (H100-SXM)."
BASES, DEFAULT_BASIS = tuple(catalog_value.BASES), catalog_value.DEFAULT_BASIS

UntilOption = Annotated[str | None, typer.Option("--until", help="End of the range (ISO date-time, UTC); default now.")]
EveryOption = Annotated[str, typer.Option("--every", help="Resolution: 1h, 1d or 1w.")]
BasisOption = Annotated[str, typer.Option("--basis", "-b", help=f"TFLOPS basis for cost-per-tflop: {', '.join(BASES)}.")]

__all__ = ["KIND_HELP", "ProvidersOption", "KindsOption", "RegionsOption", "FormatOption"]


#: ``--kind`` as the analysis reads it (the default kinds unless told otherwise).
_kinds = chosen_kinds


def _since(text: str | None, now: datetime) -> datetime | None:
    from tracker.analysis.grid import since_time

    if not text:
        return None
    return since_time(text, now, f"--since: {text!r} is neither a span (24h, 30d, 12w, 3m, 1y) nor an ISO date")


def _filters(gpu: str | None, provider: list[str] | None, kind: list[str] | None, region: list[str] | None,
             st: State | None = None) -> Filters:
    """The filters of a query; with ``st``, an unknown --provider is an error first (checked on
    ``st.reader``)."""
    from tracker.analysis.grid import Filters

    if st is not None:
        provider = check_providers(st.reader, provider)
    return Filters.of(gpus=resolve_gpu_query(gpu), providers=provider, regions=region, kinds=_kinds(kind))


def _catalog(st: State) -> specs.Catalog:
    from tracker.catalog.specs import load_catalog

    return load_catalog(st.settings.catalog_file)


def _print_json(data: Any) -> None:
    """One JSON object (``emit`` prints lists of rows); same value rules as ``emit``."""

    def plain(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, datetime):
            return v.isoformat()
        if isinstance(v, float):
            return round(v, 6)
        return v

    sys.stdout.write(json.dumps(plain(data), indent=2) + "\n")


@app.command()
def history(
    ctx: typer.Context,
    gpu: Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)],
    metric: Annotated[str, typer.Option("--metric", "-m", help=f"{', '.join(HISTORY_METRICS)}.")] = "price",
    since: Annotated[str, typer.Option("--since", help="How far back: 24h, 30d, 12w, 3m, 1y, or an ISO date.")] = "30d",
    until: UntilOption = None,
    every: EveryOption = "1d",
    provider: ProvidersOption = None,
    kind: KindsOption = None,
    region: RegionsOption = None,
    basis: BasisOption = DEFAULT_BASIS,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format (csv can be imported back).")] = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Price history per GPU: min, p25 and median across providers, and each provider's price.

    Each bucket holds the lowest price each provider listed during it; a bucket without
    data stays empty (gaps are never filled). cost-per-tflop divides by the catalog's TFLOPS
    on --basis; breakeven-months is purchase price / (price x 730 h).
    """
    with collector_paused():  # an hourly year is a million objects, all kept until printed
        from db.spans import utcnow
        from tracker.analysis.grid import Resolution, scrape_intervals
        from tracker.analysis.history import history as run_history

        st = state(ctx)
        now = utcnow()
        end = parse_at(until, "--until") or now
        reader = st.reader  # the store is opened (and migrated if it must be) before the options are read
        # plain Python on the store's own driver (no pandas, no SQLAlchemy)
        h = run_history(reader, _filters(gpu, provider, kind, region, st), metric=metric, basis=basis,
                        since=_since(since, end), until=end, resolution=Resolution.parse(every),
                        tolerance=scrape_intervals(st.settings), catalog=_catalog(st))
        print_notes(h.notes)
        table = [("time", "time", ESSENTIAL), ("gpu", "gpu", ESSENTIAL), ("min", "min", ESSENTIAL), ("p25", "p25"),
                 ("median", "median", ESSENTIAL), ("providers", "providers")] + [(p, p) for p in h.providers]
        emit(h.columns(), fmt, columns=table, title=f"{gpu} {metric} history ({h.unit}), per {h.resolution.value}", wide=wide,
             only=columns)


TREND_TABLE = [
    ("gpu", "gpu"), ("current", "now", ESSENTIAL), ("provider", "cheapest at"), ("change_24h_pct", "24h %"),
    ("change_7d_pct", "7d %"), ("change_30d_pct", "30d %"), ("change_90d_pct", "90d %"),
    ("all_time_low", "all-time low", ESSENTIAL), ("all_time_low_at", "low on"), ("good_deal", "good deal", ESSENTIAL),
    ("history_days", "days"),
    ("volatility_30d_pct", "volatility 30d %"),
]


@app.command()
def trends(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help=GPU_HELP + " Default: every GPU.")] = None,
    provider: ProvidersOption = None,
    kind: KindsOption = None,
    region: RegionsOption = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Evaluate at this ISO date-time (default: now; the past only).")] = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Every GPU's price now, its changes, all-time low and good-deal flag.

    The current price is what `prices` answers now (each provider's latest collection within
    its staleness limit), or the cheapest USD/GPU-h in effect at --as-of; changes compare it with the price 24h, 7d, 30d and 90d earlier; the
    good-deal flag is set within 5% of the all-time low once the GPU has 7 days of
    observations (history_days); volatility is the std dev of day-over-day changes of the
    daily low over 30 days.
    """
    from tracker.analysis.grid import scrape_intervals
    from tracker.analysis.trends import trends as run_trends

    st = state(ctx)
    f = _filters(gpu, provider, kind, region, st)
    when, tolerance = parse_at(as_of, "--as-of") if as_of else None, scrape_intervals(st.settings)
    # in plain Python on the store's own driver when it is current (``State.reader``)
    rows = run_trends(st.reader, f, as_of=when, tolerance=tolerance)
    _trend_notes(rows)
    if when is None:
        warn_if_stale(st, provider, hint=" (trends: --as-of)")
    as_of_text = f" as of {rows[0]['as_of']:%Y-%m-%d %H:%M UTC}" if rows else ""
    emit(rows, fmt, columns=TREND_TABLE, title=f"GPU price trends{as_of_text} (USD per GPU-hour)", wide=wide,
         only=columns)


def _trend_notes(rows: list[dict[str, Any]]) -> None:
    """Say what is missing when there is no history, or too little for the good-deal flag."""
    from tracker.analysis.history import HOW_TO_GET_HISTORY
    from tracker.analysis.trends import MIN_HISTORY_DAYS

    if not rows:
        print_notes([f"no price history matches these filters yet; {HOW_TO_GET_HISTORY}"])
        return
    short = [r for r in rows if r["history_days"] < MIN_HISTORY_DAYS]
    if short:
        most = max(r["history_days"] for r in short)
        print_notes([f"good deal needs {MIN_HISTORY_DAYS} days of observations: {len(short)} of {len(rows)} GPU(s) "
                     f"have fewer (at most {most}, see history_days); {HOW_TO_GET_HISTORY}"])


def _gpu_for_tco(gpu: str | None, cat: specs.Catalog) -> str | None:
    from tracker.analysis import specs

    if not gpu:
        return None
    ids = resolve_gpu_query(gpu) or []
    chosen = specs.flagship(ids, cat)
    if chosen is None:
        raise ConfigError(f"--gpu: {gpu!r} matches no GPU in the catalog")
    if len(ids) > 1:
        err_console.print(f"[dim]{gpu} = {chosen} (pass an exact id such as {', '.join(i for i in ids if i != chosen)} "
                          "for another variant)[/dim]", highlight=False)
    return chosen


@app.command()
def tco(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help=GPU_HELP + " A family means its flagship (H100 = H100-SXM).")] = None,
    purchase: Annotated[float | None, typer.Option("--purchase", help="Purchase price in USD (default: the catalog's).")] = None,
    rent: Annotated[float | None, typer.Option("--rent", help="Rent in USD per GPU-hour (default: the current market price).")] = None,
    rent_basis: Annotated[str, typer.Option("--rent-basis", help=f"Market rent to use: {' or '.join(RENT_BASES)} provider.")] = "cheapest",
    utilization: Annotated[float, typer.Option("--utilization", "-u", help="Share of hours the GPU is busy (0-1].")] = UTILIZATION,
    kwh: Annotated[float, typer.Option("--kwh", help="Electricity price, USD per kWh.")] = USD_PER_KWH,
    years: Annotated[float, typer.Option("--years", help="Years to spread the purchase over.")] = YEARS,
    cooling: Annotated[float, typer.Option("--cooling", help="Cooling, USD per hour of use.")] = 0.0,
    maintenance: Annotated[float, typer.Option("--maintenance", help="Maintenance, USD per hour of use.")] = 0.0,
    tdp: Annotated[float | None, typer.Option("--tdp", help="Board power in watts (default: the catalog's TDP).")] = None,
    provider: Annotated[list[str] | None, typer.Option("--provider", "-p", help="Market rent from these providers only.")] = None,
    kind: KindsOption = None,
    region: Annotated[list[str] | None, typer.Option("--region", "-r", help="Market rent from these regions only.")] = None,
    table: Annotated[bool, typer.Option("--electricity-table", help="Also print electricity per year for common TDPs, uses and prices.")] = False,
    fmt: FormatOption = Format.table,
    at: AtOption = None,
    include_stale: StaleOption = False,
) -> None:
    """Buy or rent: electricity, ownership cost per hour and break-even.

    Electricity per year = TDP kW x utilization x 8,760 h x USD/kWh; effective ownership
    cost per hour = purchase / (years x 8,760) + electricity + cooling + maintenance;
    break-even hours = purchase / rent (and the full version, purchase / (rent - running
    costs)), in months at 24/7 and at --utilization. The rent defaults to today's market
    price from the store (--at: the market price then), and rent_source says which price on which date.
    """
    from tracker.analysis.frames import records
    from tracker.analysis.tco import electricity_table, tco_for_gpu

    st = state(ctx)
    provider = check_providers(st.reader, provider)
    cat = _catalog(st)
    gid = _gpu_for_tco(gpu, cat)
    when = parse_at(at)
    if when is None and rent is None:
        warn_if_stale(st, provider)
    result = tco_for_gpu(st.reader, cat, gid, purchase=purchase, rent=rent, rent_basis=rent_basis, tdp_w=tdp,
                         kinds=_kinds(kind), providers=provider, regions=region, at=when, include_stale=include_stale,
                         utilization=utilization,
                         usd_per_kwh=kwh, years=years, cooling_per_hour=cooling, maintenance_per_hour=maintenance)
    data = result.as_dict()
    if fmt is Format.json:
        if table:
            data["electricity_table"] = records(electricity_table())
        _print_json(data)
        return
    if fmt is Format.csv:
        emit([data], fmt)
        return
    key_values(data, title=f"TCO {gid or ''}".strip())
    if table:
        emit(records(electricity_table()), fmt, title="electricity per year")


OPTION_TABLE = [
    ("gpu", "gpu"), ("gpu_count", "GPUs", ESSENTIAL), ("total_vram_gb", "VRAM GB"), ("price_per_hour", "USD/h", ESSENTIAL),
    ("cost_per_tflop_hour", "USD/TFLOP-h"), ("provider", "provider"), ("sku", "offer"), ("region", "region"),
    ("kind", "kind"),
]


@app.command()
def recommend(
    ctx: typer.Context,
    params: Annotated[str, typer.Option("--params", help="Model size: 7B, 13B, 70B, 500M ...")],
    workload: Annotated[str, typer.Option("--workload", "-w", help=f"{', '.join(WORKLOADS)}.")],
    precision: Annotated[str | None, typer.Option("--precision", help="inference: fp16, int8 or int4; qlora: int4 or int8.")] = None,
    hours_per_month: Annotated[float | None, typer.Option("--hours-per-month", callback=finite, help="Your expected use, for rent-vs-buy advice.")] = None,
    months: Annotated[float | None, typer.Option("--months", callback=finite, help="Horizon in months for the advice (default 12).")] = None,
    max_gpus: Annotated[int, typer.Option("--max-gpus", help=f"Most GPUs per instance to consider (1-{MAX_GPUS}).", min=1, max=MAX_GPUS)] = MAX_GPUS,
    provider: ProvidersOption = None,
    kind: KindsOption = None,
    region: RegionsOption = None,
    basis: Annotated[str, typer.Option("--basis", "-b", help=f"TFLOPS basis for cost per TFLOP: {', '.join(BASES)}.")] = DEFAULT_BASIS,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show at most N GPUs (table).")] = 15,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
    at: AtOption = None,
    include_stale: StaleOption = False,
    max_price: MaxPriceOption = None,
    available: Annotated[bool, typer.Option("--available", help="Only offers their provider lists as available now.")] = False,
    max_age: MaxAgeOption = None,
) -> None:
    """Which GPU for a model and workload, and whether to rent or buy.

    --max-price (USD per GPU-hour), --available and --max-age choose among the offers as they
    narrow `prices`.

    Estimates the VRAM (params x bytes per parameter x 1.2 + 1.5 GB; see
    tracker/analysis/recommend.py for the rules and sources), lists the GPUs that hold it
    on 1-8 cards at the latest market prices, cheapest first, with cost per TFLOP, and
    with --hours-per-month gives rent-vs-buy advice. --at uses the market prices in effect then.
    """
    from tracker.analysis.frames import records
    from tracker.analysis.recommend import recommend as run_recommend

    st = state(ctx)
    provider = check_providers(st.reader, provider)
    when = parse_at(at)
    if when is None:
        warn_if_stale(st, provider)
    rec = run_recommend(st.engine, params, workload, precision=precision, hours_per_month=hours_per_month,
                        months=months, max_gpus=max_gpus, kinds=_kinds(kind), providers=provider, regions=region,
                        basis=basis, catalog=_catalog(st), at=when, include_stale=include_stale,
                        narrow=lambda rows: narrow_offers(st, rows, None, None, max_price, available, max_age))
    options = records(rec.options)
    if fmt is Format.json:
        _print_json({**rec.estimate.as_dict(), "vram_needed_gb": rec.estimate.total_gb, "options": options,
                     "advice": rec.advice.as_dict() if rec.advice else None, "notes": rec.notes})
        return
    if fmt is Format.csv:
        emit(options, fmt, columns=[(c, c) for c in rec.options.columns])
        return
    e = rec.estimate
    console.print(f"[bold]{e.params_b:g}B {e.workload} ({e.precision})[/bold]: about {e.total_gb:.1f} GB of GPU memory "
                  f"[dim]({e.rule})[/dim]", highlight=False)
    priced = [o for o in options if o["price_per_hour"] is not None]
    unpriced = [f"{o['gpu']} x{o['gpus_needed']}" for o in options if o["price_per_hour"] is None]
    emit(priced[:limit], fmt, columns=OPTION_TABLE, title="GPUs that fit, cheapest first", wide=wide, only=columns)
    if unpriced:
        console.print(f"[dim]also fit, no current offer with enough GPUs: {', '.join(unpriced)}[/dim]", highlight=False)
    if rec.advice:
        a = rec.advice
        console.print(f"[bold]{a.verdict}[/bold]: {a.reason}", highlight=False)
    elif hours_per_month is None:
        console.print("[dim]pass --hours-per-month (and --months) for rent-vs-buy advice[/dim]")
    print_notes(rec.notes)


@app.command()
def plot(
    ctx: typer.Context,
    gpu: Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)],
    output: Annotated[Path, typer.Option("--output", "-o", help="chart.png (matplotlib) or chart.html (self-contained plotly).")],
    metric: Annotated[str, typer.Option("--metric", "-m", help="price or cost-per-tflop.")] = "price",
    since: Annotated[str, typer.Option("--since", help="How far back: 7d, 90d, 1y, or an ISO date.")] = "90d",
    until: UntilOption = None,
    every: EveryOption = "1d",
    provider: ProvidersOption = None,
    kind: KindsOption = None,
    region: RegionsOption = None,
    basis: BasisOption = DEFAULT_BASIS,
) -> None:
    """Chart a GPU's price or cost-per-TFLOP history to PNG or HTML.

    One line per provider, the market min and median, and the all-time low marked. The
    HTML page embeds plotly.js, so it works offline (no CDN).
    """
    if metric not in ("price", "cost-per-tflop"):
        raise ConfigError(f"--metric: {metric!r} is not one of price, cost-per-tflop")
    from db.spans import utcnow
    from tracker.analysis.grid import Resolution, scrape_intervals
    from tracker.analysis.history import history as run_history
    from tracker.analysis.plot import lows_for
    from tracker.analysis.plot import plot as write_plot
    from tracker.analysis.trends import all_time_lows

    st = state(ctx)
    end = parse_at(until, "--until") or utcnow()
    filters = _filters(gpu, provider, kind, region, st)
    tolerance = scrape_intervals(st.settings)
    cat = _catalog(st)
    h = run_history(st.reader, filters, metric=metric, basis=basis, since=_since(since, end), until=end,
                    resolution=Resolution.parse(every), tolerance=tolerance, catalog=cat)
    print_notes(h.notes)
    lows = lows_for(all_time_lows(st.reader, filters, until=end, tolerance=tolerance), metric,
                    basis, cat)
    path = write_plot(h, output, lows)
    console.print(f"wrote {path} ({path.stat().st_size:,} bytes)", highlight=False)
