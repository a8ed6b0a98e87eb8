"""The JSON API under ``/api`` (read-only). Every filter error is HTTP 400 ``{"detail": ...}``.

List filters (``provider``, ``kind``, ``region``) may be repeated or comma-separated.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import TypeAdapter

from tracker.analysis.history import METRICS
from tracker.analysis.assumptions import USD_PER_KWH, UTILIZATION, YEARS
from tracker.analysis.tco import TcoResult
from tracker.catalog import value as value_mod
from tracker.reads import data
from tracker.reads.schemas import (
    AlertEventOut,
    AlertRuleOut,
    AvailabilityOut,
    BacktestOut,
    DeliveriesOut,
    ErrorOut,
    GpuOut,
    HistoryOut,
    IndexOut,
    PriceOut,
    ProviderOut,
    RunOut,
    TrendOut,
    ValueOut,
)
from tracker.web.cache import cached
from tracker.web.context import WebContext

router = APIRouter(prefix="/api", tags=["api"], responses={400: {"model": ErrorOut, "description": "A bad filter."}})


def web_context(request: Request) -> WebContext:
    ctx: WebContext = request.app.state.web
    return ctx


Ctx = Annotated[WebContext, Depends(web_context)]
GpuQ = Annotated[str | None, Query(description="A family (`H100` = every H100 variant) or a canonical id (`H100-SXM`).")]
ProviderQ = Annotated[list[str] | None, Query(description="Provider name(s), repeatable or comma-separated.")]
KindQ = Annotated[list[str] | None, Query(description="on-demand, spot, community, reserved (repeatable), or `all`.")]
RegionQ = Annotated[list[str] | None, Query(description="Provider region code(s).")]


@router.get("/prices", response_model=list[PriceOut], summary="Latest price of every offer on sale")
async def api_prices(
    ctx: Ctx,
    request: Request,
    gpu: GpuQ = None,
    provider: ProviderQ = None,
    kind: Annotated[list[str] | None, Query(description="on-demand, spot, community or reserved (repeatable).")] = None,
    region: RegionQ = None,
    limit: Annotated[int | None, Query(ge=1, description="At most this many rows.")] = None,
) -> Response:
    """Cheapest per GPU-hour first; the same rows and keys as `gpu-tracker prices --format json`.

    At most `web.cache_s` (2 s) behind the store: one rendering serves every client meanwhile."""
    key = ("prices", gpu, tuple(provider or ()), tuple(kind or ()), tuple(region or ()), limit)
    return await cached(ctx.bodies, request, key, lambda: _PRICES.dump_json(_PRICES.validate_python(
        data.prices(ctx, gpu=gpu, providers=provider, kinds=kind, regions=region, limit=limit))))


_PRICES = TypeAdapter(list[PriceOut])
_HISTORY = TypeAdapter(HistoryOut)


@router.get("/gpus", response_model=list[GpuOut], summary="The GPU spec catalog")
def api_gpus(ctx: Ctx, gpu: GpuQ = None) -> list[dict[str, Any]]:
    """Specs, TFLOPS per precision, purchase price and sources of every GPU (or of `gpu`)."""
    return data.gpus(ctx, gpu)


@router.get("/value", response_model=ValueOut, summary="GPUs ranked by cost per TFLOP-hour")
def api_value(
    ctx: Ctx,
    basis: Annotated[str, Query(description=f"TFLOPS basis: {', '.join(value_mod.BASES)}.")] = value_mod.DEFAULT_BASIS,
    gpu: GpuQ = None,
    provider: ProviderQ = None,
    kind: Annotated[list[str] | None, Query(description="Kinds considered (default on-demand and community; `all`).")] = None,
    region: RegionQ = None,
) -> dict[str, Any]:
    """USD per TFLOP-hour of each GPU's cheapest current USD price, on an explicit basis
    (dense FP16/BF16 with FP32 accumulate by default); the basis is in every row."""
    return data.value(ctx, basis=basis, gpu=gpu, providers=provider, kinds=kind, regions=region)


@router.get("/history", response_model=HistoryOut, summary="Price history on a time grid")
async def api_history(
    ctx: Ctx,
    request: Request,
    gpu: GpuQ = None,
    since: Annotated[str | None, Query(description="A span back from now (`24h`, `30d`, `12w`, `1y`), an ISO date, or `all` (default).")] = None,
    until: Annotated[str | None, Query(description="ISO date or date-time (default: now).")] = None,
    every: Annotated[str, Query(description="hour, day, week, or auto (from the span).")] = "auto",
    metric: Annotated[str, Query(description=f"One of {', '.join(METRICS)}.")] = "price",
    basis: Annotated[str | None, Query(description="TFLOPS basis for metric=cost-per-tflop.")] = None,
    provider: ProviderQ = None,
    kind: KindQ = None,
    region: RegionQ = None,
) -> dict[str, Any]:
    """Per bucket: the market min / p25 / median across providers, and each provider's lowest
    price. Empty buckets are null (never forward-filled). Default kinds: on-demand and community.

    At most `web.cache_s` (2 s) behind the store: one rendering serves every client meanwhile."""
    key = ("history", gpu, since, until, every, metric, basis, tuple(provider or ()), tuple(kind or ()),
           tuple(region or ()))
    return await cached(ctx.bodies, request, key, lambda: _HISTORY.dump_json(_HISTORY.validate_python(data.history_json(
        data.history_frame(ctx, gpu=gpu, since=since, until=until, every=every, metric=metric, basis=basis,
                           providers=provider, kinds=kind, regions=region, clip_to_data=False)))))


@router.get("/index", response_model=IndexOut, summary="The GPU rental index by a named method")
def api_index(
    ctx: Ctx,
    gpu: GpuQ = None,
    since: Annotated[str | None, Query(description="A span back from now (`90d`), an ISO date, or `all`.")] = "90d",
    until: Annotated[str | None, Query(description="ISO date or date-time (default: now).")] = None,
    every: Annotated[str, Query(description="1d (daily, from the roll-up) or 1h (hourly, from raw intervals).")] = "1d",
    kind: KindQ = None,
    method: Annotated[str, Query(description="median-of-medians-1 or ewyluda-1.3.")] = "median-of-medians-1",
) -> dict[str, Any]:
    """Per GPU and bucket the index (= `gpu-tracker index --format json`): each provider's median
    price per GPU-hour observed in the bucket, then the median across providers, with the count,
    quartiles and range (median-of-medians-1, on-demand unless `kind` says otherwise); or the
    series of ewyluda-1.3."""
    return data.index_json(data.index(ctx, gpu=gpu, since=since, until=until, every=every, kinds=kind, method=method))


@router.get("/availability", response_model=list[AvailabilityOut], summary="How available a GPU was")
def api_availability(
    ctx: Ctx,
    gpu: Annotated[str, Query(description="A family (`H100`: every variant) or a canonical id (`H100-SXM`).")],
    since: Annotated[str, Query(description="A span back from now (`24h`, `30d`, `12w`, `1y`) or an ISO date.")] = "30d",
    until: Annotated[str | None, Query(description="ISO date or date-time (default: now).")] = None,
    provider: ProviderQ = None,
    kind: KindQ = None,
    region: RegionQ = None,
) -> list[dict[str, Any]]:
    """Per provider and region: the share of observed time at least one offer was listed as
    available, the longest unavailable stretch and when one was last available (= `gpu-tracker
    availability --format json`). A provider that states no stock has null figures (unknown)."""
    return data.availability(ctx, gpu=gpu, since=since, until=until, providers=provider, kinds=kind, regions=region)


@router.get("/trends", response_model=list[TrendOut], summary="Current price, changes, all-time low")
def api_trends(ctx: Ctx, gpu: GpuQ = None, provider: ProviderQ = None, kind: KindQ = None,
               region: RegionQ = None) -> list[dict[str, Any]]:
    """Per GPU: the cheapest current price, its change over 24 h / 7 d / 30 d / 90 d, the all-time
    low and when, a good-deal flag (within 5% of the low) and 30-day volatility."""
    return data.trends(ctx, gpu=gpu, providers=provider, kinds=kind, regions=region)


@router.get("/tco", response_model=TcoResult, summary="Buy vs rent: ownership cost and break-even")
def api_tco(
    ctx: Ctx,
    gpu: Annotated[str, Query(description="A canonical id, or a family meaning its flagship (`H100` = `H100-SXM`).")],
    purchase: Annotated[float | None, Query(gt=0, description="Purchase price in USD (default: the catalog's).")] = None,
    rent: Annotated[float | None, Query(gt=0, description="Rent in USD per GPU-hour (default: today's market price).")] = None,
    rent_basis: Annotated[str, Query(description="cheapest or median market price, when `rent` is not given.")] = "cheapest",
    utilization: Annotated[float, Query(gt=0, le=1)] = UTILIZATION,
    kwh: Annotated[float, Query(ge=0, description="USD per kWh.")] = USD_PER_KWH,
    years: Annotated[float, Query(gt=0)] = YEARS,
    cooling: Annotated[float, Query(ge=0, description="USD per hour.")] = 0.0,
    maintenance: Annotated[float, Query(ge=0, description="USD per hour.")] = 0.0,
    provider: ProviderQ = None,
    kind: KindQ = None,
    region: RegionQ = None,
) -> dict[str, Any]:
    """The same model and keys as `gpu-tracker tco --format json`: electricity per year,
    effective ownership cost per hour, simple and full break-even in hours and months."""
    return data.tco(ctx, gpu, purchase=purchase, rent=rent, rent_basis=rent_basis, providers=provider, kinds=kind,
                    regions=region, utilization=utilization, usd_per_kwh=kwh, years=years,
                    cooling_per_hour=cooling, maintenance_per_hour=maintenance)


@router.get("/providers", response_model=list[ProviderOut], summary="Providers and collection health")
def api_providers(ctx: Ctx) -> list[dict[str, Any]]:
    """Every registered scraper: the env vars it needs (names only), last run, status,
    failures in a row, data age and current offer count."""
    return data.providers(ctx)


@router.get("/runs", response_model=list[RunOut], summary="Recent scrape runs")
def api_runs(
    ctx: Ctx,
    provider: ProviderQ = None,
    status: Annotated[list[str] | None, Query(description="ok, failed, skipped or running.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[dict[str, Any]]:
    """Newest first, with the error class and message of runs that failed or were skipped."""
    return data.runs(ctx, limit=limit, providers=provider, statuses=status)


@router.get("/alerts", response_model=list[AlertRuleOut], response_model_by_alias=True,
            summary="Alert rules and their state")
def api_alerts(ctx: Ctx) -> list[dict[str, Any]]:
    """Every rule (config file and `alerts add`) with its state (armed, pending, firing or
    disabled) and since when. Channels are redacted."""
    return data.alert_rules(ctx)


@router.get("/alerts/history", response_model=list[AlertEventOut], summary="Recent alert events")
def api_alert_history(
    ctx: Ctx,
    rule: Annotated[str | None, Query(description="Only this rule's events.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[dict[str, Any]]:
    """Fired/resolved/test events, newest first, each with its deliveries (channels redacted)."""
    return data.alert_events(ctx, rule=rule, limit=limit)


@router.get("/alerts/deliveries", response_model=DeliveriesOut, summary="Alert deliveries (the outbox)")
def api_alert_deliveries(
    ctx: Ctx,
    status: Annotated[list[str] | None, Query(description="pending, delivered, failed or orphaned (repeatable).")] = None,
    rule: Annotated[str | None, Query(description="Only this rule's deliveries.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> dict[str, Any]:
    """Newest first: where each message went (redacted), its status, attempts, next attempt and
    the reason of the last failure; with the count of rows per status."""
    return data.alert_deliveries(ctx, statuses=status, rule=rule, limit=limit)


@router.get("/alerts/backtest", response_model=BacktestOut, summary="Run a rule over stored history")
def api_alert_backtest(
    ctx: Ctx,
    rule: Annotated[str | None, Query(description="A rule by name; or give one inline with gpu and a condition.")] = None,
    since: Annotated[str, Query(description="Start: a span back from now (30d, 12w, 1y) or an ISO date.")] = "30d",
    until: Annotated[str | None, Query(description="End (ISO date-time, UTC); default now.")] = None,
    gpu: Annotated[list[str] | None, Query(description="Inline rule: GPU id, family or prefix.")] = None,
    below: float | None = None,
    above: float | None = None,
    drop_pct: float | None = None,
    window: str | None = None,
    new_low: bool = False,
    available_again: bool = False,
    provider: ProviderQ = None,
    region: RegionQ = None,
    kind: KindQ = None,
    min_gpu_count: float | None = None,
    metric: str | None = None,
    basis: str | None = None,
    aggregate: str | None = None,
    for_: Annotated[int | None, Query(alias="for", ge=1, le=1000, description="Consecutive evaluations needed.")] = None,
    rearm: Annotated[str | None, Query(description="Re-arm margin: a number or a percentage like 5%.")] = None,
    resolved: bool = False,
) -> dict[str, Any]:
    """Every firing and resolution of the rule at every observation time in the range, through the
    scheduler's evaluation code; nothing is delivered and no alert state changes."""
    return data.backtest(ctx, rule, since=since, until=until, options={
        "gpu": gpu, "below": below, "above": above, "drop_pct": drop_pct, "window": window, "new_low": new_low,
        "available_again": available_again, "providers": data.split_list(provider), "regions": data.split_list(region),
        "kinds": data.split_list(kind), "min_gpu_count": min_gpu_count, "metric": metric, "basis": basis,
        "aggregate": aggregate, "for": for_, "rearm": rearm, "resolved": resolved,
    })
