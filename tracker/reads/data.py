"""What the API, the dashboard, the MCP server and the exports show, as plain dicts: one read path.

Every function takes a :class:`ReadContext` (settings, engine, catalog) and the request's
filters, and raises ``ConfigError`` for a bad filter (unknown GPU, kind, basis, span); the web
app turns that into HTTP 400, the MCP server into a tool error. Nothing here formats HTML or
knows about HTTP.

Secrets: the providers view names the environment variables a scraper needs and whether
they are set; a value is only ever tested for presence, never returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Self

from sqlalchemy.engine import Engine

from db import reads
from db.engine import engine_reader
from db.reader import Reader
from db.reads import RunRow, latest_prices
from db.spans import parse_when, utcnow
from scrapers.base import Scraper
from scrapers.registry import all_scrapers
from tracker import kinds as kinds_mod
from tracker.analysis.aggregators import market_prices
from tracker.analysis.grid import (
    DEFAULT_KINDS,
    Filters,
    Resolution,
    scrape_intervals,
    since_time,
)
from tracker.analysis.history import History
from tracker.analysis.history import history as analysis_history
from tracker.analysis.index import METHOD_1, IndexResult, rental_index
from tracker.analysis.specs import flagship
from tracker.analysis.tco import tco_for_gpu
from tracker.analysis.trends import trends as analysis_trends
from tracker.catalog import value as value_mod
from tracker.catalog.specs import GpuSpec, gpu_ids_matching, load_catalog
from tracker.config.settings import Settings
from tracker.errors import ConfigError
from tracker.pipeline.imports.aliases import external_providers

#: Price kinds anyone can rent now without interruption (the analysis default).
RENTABLE_KINDS = DEFAULT_KINDS
#: ``every=auto`` picks the resolution from the span shown.
AUTO_HOURLY_UP_TO = timedelta(days=3)
#: Days up to three years: day buckets are answered from the day roll-ups, while a week's
#: distinct offers can only be counted from raw intervals (a year of them is seconds of work).
AUTO_DAILY_UP_TO = timedelta(days=3 * 366)


@dataclass
class ReadContext:
    """What every read needs: the settings, the engine, the catalog and each provider's hold rule."""

    settings: Settings
    engine: Engine
    catalog: dict[str, GpuSpec] = field(default_factory=dict)
    tolerance: Callable[[str], timedelta] | None = None

    @classmethod
    def create(cls, settings: Settings, engine: Engine) -> Self:
        return cls(settings, engine, load_catalog(settings.catalog_file), scrape_intervals(settings))

    def reader(self) -> Reader:
        """A ``Reader`` for one request's reads (``db.reads``), closed by ``with``."""
        return engine_reader(self.engine)


# --- filters ---------------------------------------------------------------------------------


def resolve_gpus(ctx: ReadContext, query: str | None) -> list[str] | None:
    """A family (``H100``) -> every variant; a canonical id -> itself; unknown -> ConfigError."""
    if query is None or not query.strip():
        return None
    ids = gpu_ids_matching(query, ctx.catalog)
    if not ids:
        raise ConfigError(f"gpu: {query!r} matches no GPU in the catalog (see /api/gpus)")
    return ids


def tco(ctx: ReadContext, gpu: str, *, providers: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
        regions: Sequence[str] | None = None, **options: Any) -> dict[str, Any]:
    """Buy-vs-rent for a GPU (a family means its flagship, as in the CLI), same keys as
    ``gpu-tracker tco --format json``."""
    ids = resolve_gpus(ctx, gpu) or []
    chosen = flagship(ids, ctx.catalog)
    if chosen is None:
        raise ConfigError(f"gpu: {gpu!r} matches no GPU in the catalog (see /api/gpus)")
    with ctx.reader() as r:
        result = tco_for_gpu(r, ctx.catalog, chosen, providers=providers, regions=regions,
                             kinds=normalise_kinds(kinds), **options)
    return result.as_dict()


def normalise_kinds(kinds: Sequence[str] | None) -> list[str] | None:
    """``kind=`` values as every surface reads them (``tracker.kinds.normalise_kinds``), as a list."""
    chosen = kinds_mod.normalise_kinds(kinds, "kind")
    return None if chosen is None else list(chosen)


def _split(values: Sequence[str] | None) -> list[str] | None:
    """Repeated and comma-separated query values (``provider=a&provider=b,c``)."""
    if not values:
        return None
    out = [p.strip() for v in values for p in v.split(",") if p.strip()]
    return out or None


def check_providers(names: Sequence[str] | None) -> list[str] | None:
    """Registered provider names as the registry spells them (not case-sensitive: ``RunPod`` is ``runpod``)."""
    names = _split(names)
    if names:
        known = {k.lower(): k for k in all_scrapers()}
        bad = [n for n in names if n.lower() not in known]
        if bad:
            raise ConfigError(f"provider: {', '.join(bad)} is not a registered provider (see /api/providers)")
        names = [known[n.lower()] for n in names]
    return names


def parse_since(text: str | None, now: datetime) -> datetime | None:
    """``30d``/``12w``/``1y`` (a span back from now), an ISO date, or ``all``/nothing (None)."""
    if text is None or not text.strip() or text.strip().lower() == "all":
        return None
    return since_time(text, now, f"since: {text!r} is not a span like 24h, 30d, 12w, 3m, 1y, an ISO date, or 'all'")


def _no_nan(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def _round(v: Any, places: int = 10) -> Any:
    """Drop float noise (as the CLI's JSON output does), keep small ratios such as USD per TFLOP-hour."""
    return round(v, places) if isinstance(v, float) and math.isfinite(v) else v


# --- prices, catalog, value -------------------------------------------------------------------


def prices(
    ctx: ReadContext,
    *,
    gpu: str | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    limit: int | None = None,
    include_unmapped: bool = True,
    include_stale: bool = False,
) -> list[dict[str, Any]]:
    """The latest price of every offer on sale, cheapest per GPU-hour first (= ``gpu-tracker prices``;
    ``include_stale`` as ``--include-stale``)."""
    gpus = resolve_gpus(ctx, gpu)
    with ctx.reader() as r:
        rows = latest_prices(
            r, gpus=gpus, providers=check_providers(providers), kinds=normalise_kinds(kinds),
            regions=_split(regions), include_unmapped=include_unmapped, include_stale=include_stale,
        )
    if limit is not None:
        rows = rows[:limit]
    return [{k: _round(v) for k, v in r.items()} for r in rows]


def gpus(ctx: ReadContext, gpu: str | None = None) -> list[dict[str, Any]]:
    ids = resolve_gpus(ctx, gpu)
    return [s.as_json() for g, s in ctx.catalog.items() if ids is None or g in ids]


def tflops(ctx: ReadContext, gpu: str | None, basis: str = value_mod.DEFAULT_BASIS) -> float | None:
    spec = ctx.catalog.get(gpu) if gpu else None
    return value_mod.tflops_for(spec, basis) if spec is not None else None


def cost_per_tflop(ctx: ReadContext, gpu: str | None, price_per_gpu_hour: float | None, currency: str = "USD",
                   basis: str = value_mod.DEFAULT_BASIS) -> float | None:
    flops = tflops(ctx, gpu, basis)
    if not flops or price_per_gpu_hour is None or currency != "USD":
        return None
    return value_mod.cost_per_tflop_hour(price_per_gpu_hour, flops, places=4)


def value(
    ctx: ReadContext,
    *,
    basis: str = value_mod.DEFAULT_BASIS,
    gpu: str | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    include_stale: bool = False,
) -> dict[str, Any]:
    """GPUs ranked by USD per TFLOP-hour of their cheapest current USD price, on ``basis``
    (``include_stale``: also providers past their staleness limit, as ``latest_prices``)."""
    b = value_mod.check_basis(basis)
    gpu_ids = resolve_gpus(ctx, gpu)
    ks = normalise_kinds(kinds)
    with ctx.reader() as r:
        rows = latest_prices(r, gpus=gpu_ids, providers=check_providers(providers), kinds=ks,
                                     regions=_split(regions), include_unmapped=False, include_stale=include_stale)
    usd = [r for r in rows if r["gpu"] and r["currency"] == "USD"]
    counts: dict[str, int] = {}
    quoted: dict[tuple[str, float], dict[str, Any]] = {}  # the offer behind a GPU's cheapest price
    for r in usd:  # cheapest first
        counts[r["gpu"]] = counts.get(r["gpu"], 0) + 1
        quoted.setdefault((r["gpu"], r["price_per_gpu_hour"]), r)
    table = value_mod.value_table(market_prices(usd), ctx.catalog, b, counts)
    return {
        "basis": b,
        "basis_label": value_mod.BASIS_LABELS[b],
        "unit": value_mod.column_header(b),
        "kinds": ks,
        "rows": [{**{k: _round(v) for k, v in row.as_json().items()},
                  **_provenance(quoted.get((row.gpu, row.price_per_gpu_hour)))} for row in table],
    }


def _provenance(row: dict[str, Any] | None) -> dict[str, Any]:
    """Where a quoted price comes from: its provider, age in seconds and source (``live``, ``replay
    <date>``, ``import <archive>``), so an answer built on a price says how current it is."""
    row = row or {}
    return {"provider": row.get("provider"), "age_s": row.get("age_s"), "source": row.get("source")}


def current_provenance(ctx: ReadContext) -> dict[tuple[str | None, str | None], dict[str, Any]]:
    """(provider, gpu) -> the provenance of that provider's cheapest current price for that GPU
    (stale providers included: a caller asked about them said so)."""
    with ctx.reader() as r:
        rows = latest_prices(r, include_unmapped=False, include_stale=True)
    out: dict[tuple[str | None, str | None], dict[str, Any]] = {}
    for r in rows:  # cheapest first
        out.setdefault((r["provider"], r["gpu"]), _provenance(r))
    return out


# --- history and trends -----------------------------------------------------------------------


def _filters(ctx: ReadContext, gpu: str | None, providers: Sequence[str] | None, kinds: Sequence[str] | None,
             regions: Sequence[str] | None) -> Filters:
    return Filters(
        gpus=tuple(g) if (g := resolve_gpus(ctx, gpu)) else None,
        providers=tuple(p) if (p := check_providers(providers)) else None,
        regions=tuple(r) if (r := _split(regions)) else None,
        kinds=tuple(k) if (k := normalise_kinds(kinds)) else None,
    )


def pick_resolution(every: str | None, since: datetime | None, until: datetime) -> Resolution:
    if every and every.strip().lower() != "auto":
        return Resolution.parse(every)
    if since is None:
        return Resolution.day
    span = until - since
    if span <= AUTO_HOURLY_UP_TO:
        return Resolution.hour
    return Resolution.day if span <= AUTO_DAILY_UP_TO else Resolution.week


def history_frame(
    ctx: ReadContext,
    *,
    gpu: str | None = None,
    since: str | None = None,
    until: str | None = None,
    every: str | None = "auto",
    metric: str = "price",
    basis: str | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    clip_to_data: bool = True,
) -> History:
    """The analysis ``History`` for the request. Without ``since`` the range starts at the first
    stored price; with ``clip_to_data`` a ``since`` before it is moved up to it (so a young
    database is not drawn as months of emptiness)."""
    filters = _filters(ctx, gpu, providers, kinds, regions)
    if basis is not None:
        basis = value_mod.check_basis(basis)
    until_dt = parse_when(until) if until else utcnow()
    since_dt = parse_since(since, until_dt)
    if since_dt is None or clip_to_data:
        with ctx.reader() as r:
            first = reads.first_price_at(r, list(filters.gpus) if filters.gpus else None)
        if first is not None and (since_dt is None or first > since_dt):
            since_dt = min(first, until_dt)
    if since_dt is not None and since_dt > until_dt:
        raise ConfigError("since: the range starts after it ends")
    resolution = pick_resolution(every, since_dt, until_dt)
    with ctx.reader() as r:
        return analysis_history(r, filters, metric=metric, basis=basis, since=since_dt, until=until_dt,
                                resolution=resolution, tolerance=ctx.tolerance)


def history_json(h: History) -> dict[str, Any]:
    market = [{k: _round(_no_nan(v)) for k, v in m.items()} for m in h.market_rows]
    by_provider = [{**r, "value": _round(_no_nan(r["value"]))} for r in h.provider_rows]
    return {
        "metric": h.metric,
        "unit": h.unit,
        "resolution": h.resolution.value,
        "since": h.since,
        "until": h.until,
        "kinds": list(h.kinds) if h.kinds else None,
        "gpus": h.gpus,
        "providers": h.providers,
        "notes": h.notes,
        "market": market,
        "by_provider": by_provider,
    }


def index(ctx: ReadContext, *, gpu: str | None = None, since: str | None = "90d", until: str | None = None,
          every: str = "1d", kinds: Sequence[str] | None = None, method: str = METHOD_1) -> IndexResult:
    """The rental index (``gpu-tracker index``): on-demand only unless ``kinds`` says otherwise."""
    until_dt = parse_when(until) if until else utcnow()
    chosen = normalise_kinds(kinds) if kinds else None
    with ctx.reader() as r:
        return rental_index(r, resolve_gpus(ctx, gpu), method=method, kinds=chosen, kinds_given=bool(kinds),
                            since=parse_since(since, until_dt), until=until_dt, resolution=every)


#: How far back "the index now" looks for a GPU's newest daily value.
INDEX_LOOKBACK = "7d"


def latest_index(ctx: ReadContext, gpu: str | None = None) -> dict[str, dict[str, Any]]:
    """Each GPU's newest daily rental index (median-of-medians-1, on-demand) of the last week:
    the dashboard's headline and the Prometheus gauge."""
    latest: dict[str, dict[str, Any]] = {}
    for row in index(ctx, gpu=gpu, since=INDEX_LOOKBACK).rows:  # by day, so the newest comes last
        latest[row["gpu"]] = row
    return latest


def index_json(r: IndexResult) -> dict[str, Any]:
    return {"method": r.method, "version": r.metadata()["index_method_version"], "resolution": r.resolution.value,
            "since": r.since, "until": r.until, "kinds": list(r.kinds) if r.kinds is not None else None,
            "source": r.source, "notes": r.notes, "rows": [{k: _round(v) for k, v in row.items()} for row in r.rows]}


def availability(
    ctx: ReadContext,
    *,
    gpu: str,
    since: str | None = "30d",
    until: str | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Per provider and region, how available ``gpu`` was over the range (= ``gpu-tracker availability
    --format json``): share of observed time, longest unavailable stretch, last available."""
    from tracker.analysis.availability import availability as analysis_availability

    filters = _filters(ctx, gpu, providers, kinds, regions)
    if not filters.gpus:
        raise ConfigError("gpu: name a GPU or family, e.g. gpu=H100")
    until_dt = parse_when(until) if until else utcnow()
    since_dt = parse_since(since or "30d", until_dt)
    if since_dt is None:  # all: from the first stored price of the GPU, at most the longest range back
        from tracker.analysis.availability import MAX_RANGE

        with ctx.reader() as r:
            since_dt = max(reads.first_price_at(r, list(filters.gpus)) or until_dt, until_dt - MAX_RANGE)
    with ctx.reader() as r:
        found = analysis_availability(r, list(filters.gpus), since_dt, until_dt, providers=filters.providers,
                                      kinds=filters.kinds if filters.kinds is not None else DEFAULT_KINDS,
                                      regions=filters.regions)
    return [a.row() for a in found]


def trends(
    ctx: ReadContext,
    *,
    gpu: str | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    with ctx.reader() as r:
        rows = analysis_trends(r, _filters(ctx, gpu, providers, kinds, regions), tolerance=ctx.tolerance)
    marks = current_provenance(ctx) if rows else {}
    empty = {"age_s": None, "source": None}
    return [{**{k: _round(v) for k, v in r.items()},
             **{k: v for k, v in marks.get((r.get("provider"), r.get("gpu")), empty).items() if k != "provider"}}
            for r in rows]


# --- providers and runs -----------------------------------------------------------------------


def age(ts: datetime | None, now: datetime | None = None) -> str | None:
    if ts is None:
        return None
    seconds = ((now or utcnow()) - ts).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{max(seconds, 0):.0f}s"


def credential_names(settings: Settings, name: str, cls: type[Scraper]) -> tuple[list[str], list[str]]:
    """(required, optional) env var names as the user must set them (config renames applied)."""
    ps = settings.provider(name)
    rename: dict[str, str] = {}
    primary = cls.credentials[0] if cls.credentials else (
        cls.optional_credentials[0] if len(cls.optional_credentials) == 1 else None)
    if ps.api_key_env and primary:
        rename[primary] = ps.api_key_env
    rename.update(ps.credentials_env)
    return [rename.get(n, n) for n in cls.credentials], [rename.get(n, n) for n in cls.optional_credentials]


def _health(enabled: bool, missing: list[str], status: str | None, last_success: datetime | None,
            interval_s: float, now: datetime) -> str:
    if not enabled:
        return "disabled"
    if status is None:
        return "skipped" if missing else "never_run"
    if status == "failed":
        return "failing"
    if status == "skipped":
        return "skipped"
    if status == "partial":
        return "partial"
    if last_success is not None and (now - last_success).total_seconds() > 2 * interval_s + 300:
        return "stale"
    return "ok"


def providers(ctx: ReadContext) -> list[dict[str, Any]]:
    now = utcnow()
    with ctx.reader() as r:
        stored = reads.providers(r)
        runs = reads.latest_run_per_provider(r)
        counts = reads.current_offer_counts(r)
        external = external_providers(r)
    out = []
    # the active ones first, then the retired ones (no longer collected; their history stays readable)
    for name, cls in sorted(all_scrapers().items(), key=lambda item: (item[1].retired is not None, item[0])):
        env = ctx.settings.provider_env(name)
        required, optional = credential_names(ctx.settings, name, cls)
        missing = [shown for default, shown in zip(cls.credentials, required, strict=True) if not env.get(default)]
        p = stored.get(name)
        last: RunRow | None = runs.get(name)
        enabled = ctx.settings.provider(name).enabled
        interval = ctx.settings.interval_for(name, cls)
        status = p.last_status if p else None
        last_success = p.last_success_at if p else None
        note = f"set {' and '.join(missing)} to enable" if missing else None
        error_class = error_message = None
        if last is not None and last.status not in ("ok", "running"):
            error_class, error_message = last.error_class, last.error_message
            note = error_message or note
        retired = cls.retired
        if retired is not None:
            enabled, missing, note = False, [], f"retired since {retired.on.isoformat()}: {retired.reason}"
        out.append({
            "provider": name,
            "display_name": cls.display_name,
            "homepage": cls.homepage,
            "endpoint": getattr(cls, "endpoint", "") or "",
            "kinds": list(cls.kinds),
            "caveats": cls.caveats,
            "enabled": enabled,
            "credentials": required,
            "optional_credentials": optional,
            "credentials_missing": missing,
            "interval_s": interval,
            "health": "retired" if retired is not None else _health(enabled, missing, status, last_success, interval, now),
            "last_run_at": p.last_run_at if p else None,
            "status": status,
            "last_success_at": last_success,
            "consecutive_failures": p.consecutive_failures if p else 0,
            "data_age_s": round((now - last_success).total_seconds(), 1) if last_success else None,
            "data_age": age(last_success, now),
            "offers": counts.get(name, 0),
            "last_error_class": error_class,
            "last_error_message": error_message,
            "external": False,
            "retired": retired is not None,
            "retired_on": retired.on if retired is not None else None,
            "retired_reason": retired.reason if retired is not None else None,
            "note": note,
        })
    for name, p in sorted(external.items()):
        last_success = p.last_success_at
        out.append({
            "provider": name, "display_name": p.display_name or name, "homepage": "", "endpoint": "", "kinds": [],
            "caveats": "known from imported history only", "enabled": False, "credentials": [],
            "optional_credentials": [], "credentials_missing": [], "interval_s": float(p.interval_s or 3600),
            "health": "external", "last_run_at": p.last_run_at, "status": p.last_status,
            "last_success_at": last_success, "consecutive_failures": 0,
            "data_age_s": round((now - last_success).total_seconds(), 1) if last_success else None,
            "data_age": age(last_success, now), "offers": counts.get(name, 0), "last_error_class": None,
            "last_error_message": None, "external": True, "retired": False, "retired_on": None, "retired_reason": None,
            "note": "external: known from imported history only (no scraper)",
        })
    return out


def run_row(r: RunRow) -> dict[str, Any]:
    return {
        "id": r.id, "provider": r.provider, "started_at": r.started_at, "finished_at": r.finished_at,
        "status": r.status, "replay": r.source == "replay", "offers_seen": r.offers_seen, "new_offers": r.new_offers,
        "prices_changed": r.prices_changed, "quarantined": r.quarantined, "unmapped": r.unmapped,
        "duration_s": _round(r.duration_s, 3), "error_class": r.error_class, "error_message": r.error_message,
    }


def runs(ctx: ReadContext, *, limit: int = 50, providers: Sequence[str] | None = None,
         statuses: Sequence[str] | None = None) -> list[dict[str, Any]]:
    st = _split(statuses)
    bad = [x for x in st or () if x not in ("ok", "partial", "failed", "skipped", "running")]
    if bad:
        raise ConfigError(f"status: {', '.join(bad)} is not one of ok, partial, failed, skipped, running")
    with ctx.reader() as r:
        rows = reads.recent_runs(r, limit=limit, providers=check_providers(providers), statuses=st)
    return [run_row(r) for r in rows]


# --- alerts -----------------------------------------------------------------------------------
# ``tracker.alerts`` is imported late: the app keeps serving prices if alerting is broken.


def alert_rules(ctx: ReadContext) -> list[dict[str, Any]]:
    """Every rule with its state and since when (channels redacted); ConfigError for a bad rule."""
    from tracker import alerts

    with ctx.reader() as r:
        return alerts.rule_states(r, ctx.settings)


def alert_events(ctx: ReadContext, *, rule: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """Fired, resolved, test and digest events, newest first, each with its deliveries."""
    from tracker import alerts

    with ctx.reader() as r:
        return alerts.history(r, rule=rule, limit=limit)


def alert_deliveries(ctx: ReadContext, *, statuses: Sequence[str] | None = None, rule: str | None = None,
                     limit: int = 50) -> dict[str, Any]:
    """The newest outbox rows (redacted, errors scrubbed) and the count of rows per status."""
    from tracker import alerts

    with ctx.reader() as r:
        return {"counts": alerts.delivery_counts(r),
                "deliveries": alerts.deliveries(r, statuses=_split(statuses), rule=rule, limit=limit)}


def split_list(values: Sequence[str] | None) -> list[str] | None:
    """Repeated or comma-separated query values as one list."""
    return _split(values)


def backtest(ctx: ReadContext, rule: str | None, *, since: str, until: str | None,
             options: dict[str, Any]) -> dict[str, Any]:
    """``tracker.alerts.backtest`` for the API (read-only; bounded by its evaluation limit)."""
    from tracker.alerts.backtest import backtest as run_backtest
    from tracker.alerts.backtest import resolve_rule

    end = parse_when(until) if until else utcnow()
    start = since_time(since, end, f"since: {since!r} is not a span like 30d, 12w, 1y or an ISO date")
    with ctx.reader() as r:
        chosen = resolve_rule(ctx.settings, r, rule, options)
    return run_backtest(ctx.engine, ctx.settings, chosen, since=start, until=end).as_dict()
