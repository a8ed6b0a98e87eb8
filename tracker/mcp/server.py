"""The MCP server: one tool per question, each a thin call into the read path the JSON API uses
(``tracker.reads.data``, itself over ``db.labels`` and ``tracker.analysis``), so a tool's answer
is the API's and the CLI's answer for the same filters.

Read-only by construction: the engine is opened with ``read_only=True`` (the database refuses
writes on every connection), migrations and catalog syncs are not run, and no tool scrapes.
Every tool has a typed input schema (type hints with pydantic ``Field`` limits) and structured
output (a pydantic model); a bad filter comes back as a one-line tool error, never a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar, get_type_hints

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, create_model
from sqlalchemy import inspect
from sqlalchemy.engine import Engine

from db.engine import make_engine
from db.spans import utcnow
from tracker import __version__
from tracker.analysis.assumptions import MAX_GPUS, MAX_HOURS_PER_MONTH, RENT_BASES, USD_PER_KWH, UTILIZATION, WORKLOADS, YEARS
from tracker.analysis.frames import records
from tracker.analysis.history import METRICS
from tracker.analysis.recommend import Advice as RentOrBuy
from tracker.analysis.recommend import recommend as run_recommend
from tracker.analysis.tco import TcoResult
from tracker.catalog.value import BASES, DEFAULT_BASIS
from tracker.config.settings import Settings
from tracker.errors import ConfigError, TrackerError
from tracker.reads import data
from tracker.reads.schemas import (
    AvailabilityOut,
    BacktestOut,
    GpuOut,
    HistoryOut,
    IndexOut,
    PriceOut,
    ProviderOut,
    TrendOut,
    ValueOut,
)
from tracker.service.status import scheduler_state

INSTRUCTIONS = (
    "GPU cloud prices collected by gpu-price-tracker, read-only. Prices are USD (or the provider's "
    "currency) per hour for the whole instance and per GPU-hour. A GPU filter takes a family (H100 = every "
    "H100 variant) or a canonical id (H100-SXM). Kinds: on-demand, spot, community, reserved, or all. "
    "Start with `prices` or `value`; `availability` says how often a GPU could be rented where providers state "
    "stock; `provider_health` says how fresh each provider's data is."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
#: Most price rows one call returns (every request has a bounded cost).
MAX_ROWS = 1000

T = TypeVar("T")

#: ``gpu`` is one type in every tool: a string naming a family or a canonical id (the ``gpus`` tool lists them).
GPU_TEXT = "A family (H100 = every variant) or a canonical id (H100-SXM); the `gpus` tool lists them."
Gpu = Annotated[str | None, Field(description=GPU_TEXT)]
RequiredGpu = Annotated[str, Field(description=GPU_TEXT)]
Providers = Annotated[list[str] | None, Field(description="Only these providers (registered scraper names).")]
Kinds = Annotated[list[str] | None, Field(
    description="on-demand, spot, community, reserved, or all. Default: on-demand and community (prices: every kind).")]
Regions = Annotated[list[str] | None, Field(description="Provider region codes.")]
Basis = Annotated[str, Field(description=f"TFLOPS basis: {', '.join(BASES)}.")]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PricesOut(_Out):
    rows: list[PriceOut] = Field(description="Latest price of every matching offer on sale, cheapest per GPU-hour first.")
    returned: int
    matching: int = Field(description="Offers that match before the limit.")


class TrendsOut(_Out):
    rows: list[TrendOut] = Field(description="One row per GPU with a current price.")


class AvailabilitiesOut(_Out):
    rows: list[AvailabilityOut] = Field(description="One row per provider and region with offers of the GPU in the range.")


class RecommendOption(_Out):
    gpu: str
    vram_gb: float | None
    gpus_needed: int
    gpu_count: float | None = Field(description="GPUs in the cheapest offer that fits (null: no current offer).")
    total_vram_gb: float | None
    price_per_hour: float | None = Field(description="Whole-instance USD per hour of that offer.")
    price_per_gpu_hour: float | None
    tflops: float | None
    cost_per_tflop_hour: float | None
    provider: str | None
    sku: str | None
    region: str | None
    kind: str | None
    observed_at: datetime | None
    purchase_price_per_gpu: float | None
    tdp_w: float | None
    age_s: int | None = Field(None, description="Seconds since the provider last listed that offer's price.")
    source: str | None = Field(None, description="Where that price came from: `live`, `replay <date>` or `import <archive>`.")


class GpusOut(_Out):
    rows: list[GpuOut] = Field(description="Catalog GPUs: canonical id, memory (vram_gb) and TFLOPS per precision.")


def _model_of(name: str, cls: type, **fields: Any) -> type[_Out]:
    """A dataclass of the analysis as a pydantic model (``fields`` replace some of its fields), so
    a tool declares its output schema without restating the dataclass."""
    return create_model(name, __base__=_Out, **{k: (t, ...) for k, t in get_type_hints(cls).items()} | fields)


Advice = _model_of("Advice", RentOrBuy, verdict=(str, Field(description="rent or consider buying.")))


class RecommendOut(_Out):
    params_b: float
    workload: str
    precision: str
    bytes_per_param: float
    weights_gb: float
    vram_needed_gb: float
    rule: str = Field(description="How the VRAM estimate was computed.")
    options: list[RecommendOption]
    advice: Advice | None
    notes: list[str]


class SchedulerOut(_Out):
    active: bool = Field(description="Whether a `gpu-tracker run` scheduler holds the lease on this database.")
    pid: int | None
    host: str | None
    since: datetime | None
    heartbeat_at: datetime | None
    stopped_at: datetime | None


class HealthOut(_Out):
    providers: list[ProviderOut]
    scheduler: SchedulerOut
    stale: list[str] = Field(description="Providers whose data is stale (no success for over two intervals).")
    failing: list[str] = Field(description="Providers whose newest run failed.")


TcoOut = _model_of("TcoOut", TcoResult)


def _answer(fn: Callable[[], T]) -> T:
    """Run a tool body; our own errors (a bad filter, an unknown GPU) become one-line tool errors,
    in this server's words (``mcp_words``)."""
    try:
        return fn()
    except TrackerError as exc:
        raise ToolError(mcp_words(str(exc))) from None


#: What the shared messages say for the command line or the JSON API, and what a tool caller can do instead.
_MCP_PHRASES = (
    (re.compile(r"\(see /api/gpus\)|\(list them with `gpu-tracker catalog`\)"), "(the `gpus` tool lists them)"),
    (re.compile(r"\(see /api/providers\)|\(list them with `gpu-tracker providers`\)"),
     "(the `provider_health` tool lists them)"),
    (re.compile(r"run `gpu-tracker scrape`( first)?"), r"the store needs a collection (`gpu-tracker scrape`, outside "
                                                       r"this read-only server)\1"),
    (re.compile(r"collect over time with `gpu-tracker run`.*import FILE`"),
     "the store needs more history (a collector, `gpu-tracker run`, or `gpu-tracker import`, outside this "
     "read-only server)"),
    (re.compile(r",? ask about a past moment with --at,? or use the last \(stale\) prices with --include-stale"), ""),
    (re.compile(r" or another --at"), ""),
    (re.compile(r"--for\b"), "`for_evaluations`"),
    (re.compile(r"--since/--until"), "`since`/`until`"),
    (re.compile(r"--([a-z][a-z-]*)"), lambda m: f"`{m.group(1).replace('-', '_')}`"),
)


def mcp_words(message: str) -> str:
    """A message written for the command line or the API, worded for a tool caller: option flags
    become the tool's parameter names, command and endpoint hints the tools that answer them."""
    for pattern, replacement in _MCP_PHRASES:
        message = pattern.sub(replacement, message)
    return message


def _with_age(option: dict[str, Any], sources: dict[tuple[str | None, str | None], dict[str, Any]]) -> dict[str, Any]:
    """A recommended offer with its age (from ``observed_at``) and source (its provider's, ``data.current_provenance``)."""
    seen = option.get("observed_at")
    age = None if seen is None else max(0, int((utcnow() - seen).total_seconds()))
    source = sources.get((option.get("provider"), option.get("gpu")), {}).get("source")
    return {**option, "age_s": age, "source": source}


def open_read_only(settings: Settings, url: str | None = None) -> data.ReadContext:
    """The store at ``url`` opened so that no write can happen; it must exist and be initialised."""
    engine: Engine = make_engine(url or settings.database, read_only=True)
    if not inspect(engine).has_table("offer"):
        engine.dispose()
        raise ConfigError("database: no tracker store there (run `gpu-tracker scrape` to create one)")
    return data.ReadContext.create(settings, engine)


def build_server(ctx: data.ReadContext) -> MCPServer:
    server = MCPServer(name="gpu-price-tracker", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(title="Current prices", annotations=READ_ONLY)
    def prices(gpu: Gpu = None, provider: Providers = None, kind: Kinds = None, region: Regions = None,
               limit: Annotated[int, Field(ge=1, le=MAX_ROWS, description="Most rows to return.")] = 50) -> PricesOut:
        """Latest price of every offer on sale, cheapest per GPU-hour first (= `gpu-tracker prices`, /api/prices)."""
        rows = _answer(lambda: data.prices(ctx, gpu=gpu, providers=provider, kinds=kind, regions=region))
        return PricesOut(rows=rows[:limit], returned=min(limit, len(rows)), matching=len(rows))

    @server.tool(title="GPU catalog", annotations=READ_ONLY)
    def gpus(gpu: Gpu = None) -> GpusOut:
        """The GPUs this server knows: each canonical id (what `gpu` takes in every tool) with its family, memory
        (vram_gb) and TFLOPS per precision (dense and sparse FP16, FP8, TF32, FP32), with sources."""
        return GpusOut(rows=[GpuOut.model_validate(r) for r in _answer(lambda: data.gpus(ctx, gpu))])

    @server.tool(title="Price history", annotations=READ_ONLY)
    def history(
        gpu: RequiredGpu,
        since: Annotated[str, Field(description="How far back: 24h, 30d, 12w, 3m, 1y, an ISO date, or all.")] = "30d",
        every: Annotated[str, Field(description="Bucket: 1h, 1d, 1w, or auto (from the span).")] = "1d",
        metric: Annotated[str, Field(description=f"{', '.join(METRICS)}.")] = "price",
        basis: Annotated[str | None, Field(description="TFLOPS basis for cost-per-tflop.")] = None,
        provider: Providers = None, kind: Kinds = None, region: Regions = None,
    ) -> HistoryOut:
        """Min / p25 / median across providers (each provider's cheapest once) and each provider's price per
        bucket; empty buckets stay empty (= `gpu-tracker history`, /api/history)."""
        h = _answer(lambda: data.history_frame(ctx, gpu=gpu, since=since, every=every, metric=metric, basis=basis,
                                               providers=provider, kinds=kind, regions=region, clip_to_data=False))
        out = data.history_json(h)
        return HistoryOut.model_validate({**out, "notes": [mcp_words(n) for n in out["notes"]]})

    @server.tool(title="Rental index", annotations=READ_ONLY)
    def index(
        gpu: Gpu = None,
        since: Annotated[str, Field(description="How far back: 30d, 90d, 1y, an ISO date, or all.")] = "90d",
        every: Annotated[str, Field(description="Bucket: 1d (from the roll-up) or 1h (from raw intervals).")] = "1d",
        kind: Kinds = None,
        method: Annotated[str, Field(description="median-of-medians-1 (default) or ewyluda-1.3.")] = "median-of-medians-1",
    ) -> IndexOut:
        """What a GPU costs on the market per bucket: each provider's median price per GPU-hour, then the median
        across providers, with their count (thin under 3), quartiles and range; on-demand unless `kind` says
        otherwise (= `gpu-tracker index`, /api/index). ewyluda-1.3 gives that published index's series."""
        result = _answer(lambda: data.index(ctx, gpu=gpu, since=since, every=every, kinds=kind, method=method))
        return IndexOut.model_validate(data.index_json(result))

    @server.tool(title="Availability", annotations=READ_ONLY)
    def availability(
        gpu: RequiredGpu,
        since: Annotated[str, Field(description="How far back: 24h, 30d, 12w, 3m, 1y, or an ISO date.")] = "30d",
        provider: Providers = None, kind: Kinds = None, region: Regions = None,
    ) -> AvailabilitiesOut:
        """Per provider and region: the share of observed time at least one offer was listed as available, the
        longest unavailable stretch and when one was last available; null figures where the provider states no
        stock (unknown, never unavailable) (= `gpu-tracker availability`, /api/availability)."""
        rows = _answer(lambda: data.availability(ctx, gpu=gpu, since=since, providers=provider, kinds=kind,
                                                 regions=region))
        return AvailabilitiesOut(rows=[AvailabilityOut.model_validate(r) for r in rows])

    @server.tool(title="Price trends", annotations=READ_ONLY)
    def trends(gpu: Gpu = None, provider: Providers = None, kind: Kinds = None, region: Regions = None) -> TrendsOut:
        """Per GPU: the cheapest current price, its change over 24h / 7d / 30d / 90d, the all-time low and when,
        a good-deal flag (within 5% of the low) and 30-day volatility (= `gpu-tracker trends`, /api/trends)."""
        rows = _answer(lambda: data.trends(ctx, gpu=gpu, providers=provider, kinds=kind, regions=region))
        keys = TrendOut.model_fields
        return TrendsOut(rows=[TrendOut.model_validate({k: v for k, v in r.items() if k in keys}) for r in rows])

    @server.tool(title="Cost per TFLOP", annotations=READ_ONLY)
    def value(basis: Basis = DEFAULT_BASIS, gpu: Gpu = None, provider: Providers = None, kind: Kinds = None,
              region: Regions = None) -> ValueOut:
        """GPUs ranked by USD per TFLOP-hour of their cheapest current USD price on an explicit TFLOPS basis,
        with the median across providers (each cloud once) and USD per GB of VRAM (= /api/value)."""
        return ValueOut.model_validate(_answer(lambda: data.value(ctx, basis=basis, gpu=gpu, providers=provider,
                                                                  kinds=kind, regions=region)))

    @server.tool(title="Buy vs rent (TCO)", annotations=READ_ONLY)
    def tco(
        gpu: Annotated[str, Field(description=GPU_TEXT + " A family means its flagship (H100 = H100-SXM).")],
        purchase: Annotated[float | None, Field(gt=0, description="Purchase price, USD (default: the catalog's).")] = None,
        rent: Annotated[float | None, Field(gt=0, description="Rent, USD per GPU-hour (default: today's market).")] = None,
        rent_basis: Annotated[str, Field(description=f"Market rent when `rent` is not given: {' or '.join(RENT_BASES)}.")] = "cheapest",
        utilization: Annotated[float, Field(gt=0, le=1, description="Share of hours the GPU is busy.")] = UTILIZATION,
        kwh: Annotated[float, Field(ge=0, description="Electricity, USD per kWh.")] = USD_PER_KWH,
        years: Annotated[float, Field(gt=0, description="Years to spread the purchase over.")] = YEARS,
        cooling: Annotated[float, Field(ge=0, description="USD per hour of use.")] = 0.0,
        maintenance: Annotated[float, Field(ge=0, description="USD per hour of use.")] = 0.0,
        provider: Providers = None, kind: Kinds = None, region: Regions = None,
    ) -> TcoOut:  # type: ignore[valid-type]
        """Electricity per year, ownership cost per hour, simple and full break-even in hours and months; the
        rent defaults to today's market price and rent_source says which (= `gpu-tracker tco`, /api/tco)."""
        out = _answer(lambda: data.tco(ctx, gpu, purchase=purchase, rent=rent, rent_basis=rent_basis,
                                       providers=provider, kinds=kind, regions=region, utilization=utilization,
                                       usd_per_kwh=kwh, years=years, cooling_per_hour=cooling,
                                       maintenance_per_hour=maintenance))
        return TcoOut.model_validate(out)

    @server.tool(title="Which GPU for a model", annotations=READ_ONLY)
    def recommend(
        params: Annotated[str, Field(description="Model size: 7B, 13B, 70B, 500M ...")],
        workload: Annotated[str, Field(description=f"{', '.join(WORKLOADS)}.")],
        precision: Annotated[str | None, Field(description="inference: fp16, int8 or int4; qlora: int4 or int8.")] = None,
        hours_per_month: Annotated[float | None, Field(gt=0, le=MAX_HOURS_PER_MONTH, description="Expected use, for rent-vs-buy advice.")] = None,
        months: Annotated[float | None, Field(gt=0, description="Horizon for the advice (default 12).")] = None,
        max_gpus: Annotated[int, Field(ge=1, le=MAX_GPUS, description="Most GPUs per instance.")] = MAX_GPUS,
        basis: Basis = DEFAULT_BASIS,
        provider: Providers = None, kind: Kinds = None, region: Regions = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most GPU options to return.")] = 20,
    ) -> RecommendOut:
        """VRAM estimate for the model and workload, the GPUs that hold it on 1-8 cards at current market
        prices (cheapest first, with cost per TFLOP), and rent-vs-buy advice (= `gpu-tracker recommend`)."""
        rec = _answer(lambda: run_recommend(
            ctx.engine, params, workload, precision=precision, hours_per_month=hours_per_month, months=months,
            max_gpus=max_gpus, kinds=data.normalise_kinds(kind), providers=data.check_providers(provider),
            regions=region, basis=basis, catalog=ctx.catalog))
        e = rec.estimate
        sources = data.current_provenance(ctx)
        return RecommendOut(
            params_b=e.params_b, workload=e.workload, precision=e.precision, bytes_per_param=e.bytes_per_param,
            weights_gb=e.weights_gb, vram_needed_gb=e.total_gb, rule=e.rule,
            options=[RecommendOption.model_validate(_with_age(o, sources)) for o in records(rec.options)[:limit]],
            advice=Advice.model_validate(rec.advice.as_dict()) if rec.advice else None,
            notes=[mcp_words(n) for n in rec.notes])

    @server.tool(title="Alert backtest", annotations=READ_ONLY)
    def alert_backtest(
        rule: Annotated[str | None, Field(description="A configured rule by name; or give one inline with gpu and a condition.")] = None,
        since: Annotated[str, Field(description="Start: a span back from now (30d, 12w, 1y) or an ISO date.")] = "30d",
        until: Annotated[str | None, Field(description="End (ISO date-time, UTC); default now.")] = None,
        gpu: Annotated[str | None, Field(description="Inline rule: " + GPU_TEXT)] = None,
        below: Annotated[float | None, Field(description="Inline rule: fire when the value drops below this.")] = None,
        above: Annotated[float | None, Field(description="Inline rule: fire when the value rises above this.")] = None,
        drop_pct: Annotated[float | None, Field(gt=0, lt=100, description="Inline rule: fire on a drop of this percentage over `window`.")] = None,
        window: Annotated[str | None, Field(description="Window for drop_pct (24h, 7d).")] = None,
        new_low: Annotated[bool, Field(description="Inline rule: fire on a new all-time low.")] = False,
        available_again: Annotated[bool, Field(description="Inline rule: fire when an offer is available again.")] = False,
        provider: Providers = None, kind: Kinds = None, region: Regions = None,
        metric: Annotated[str | None, Field(description="price (default), cost-per-tflop, breakeven-months or index (the rental index of one GPU id).")] = None,
        for_evaluations: Annotated[int | None, Field(ge=1, le=1000, description="Consecutive evaluations needed to fire (the rule option `for`).")] = None,
    ) -> BacktestOut:
        """What a rule would have done over stored history: every firing and resolution at every observation
        time, through the scheduler's own evaluation code; nothing is stored or sent (= /api/alerts/backtest)."""
        options = {"gpu": [gpu] if gpu else None, "below": below, "above": above, "drop_pct": drop_pct, "window": window,
                   "new_low": new_low, "available_again": available_again, "providers": provider, "regions": region,
                   "kinds": kind, "min_gpu_count": None, "metric": metric, "basis": None, "aggregate": None,
                   "for": for_evaluations, "rearm": None, "resolved": False}
        return BacktestOut.model_validate(_answer(lambda: data.backtest(ctx, rule, since=since, until=until,
                                                                        options=options)))

    @server.tool(title="Provider health", annotations=READ_ONLY)
    def provider_health() -> HealthOut:
        """Per provider: last run and status, last success, data age, failures in a row, current offers and
        health (ok, stale, failing, skipped, disabled, never_run); and whether a collector is running."""
        rows = data.providers(ctx)
        return HealthOut(providers=[ProviderOut.model_validate(r) for r in rows],
                         scheduler=SchedulerOut.model_validate(scheduler_state(ctx.engine)),
                         stale=[r["provider"] for r in rows if r["health"] == "stale"],
                         failing=[r["provider"] for r in rows if r["health"] == "failing"])

    return server


def serve(settings: Settings, url: str | None = None) -> None:
    """Serve the store on stdin/stdout until the client closes the pipe."""
    ctx = open_read_only(settings, url)
    try:
        build_server(ctx).run("stdio")
    finally:
        ctx.engine.dispose()

