"""What the dashboard pages show, composed from ``tracker.reads.data`` (the API's read path):
the overview (cheapest offer per GPU now, trends, provider health), a GPU page (offers,
trends, chart series) and the alerts page (rules, events, deliveries)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from db.reads import stale_note
from tracker.analysis.aggregators import cheapest_per_provider
from tracker.analysis.history import History
from tracker.catalog import value as value_mod
from tracker.errors import TrackerError
from tracker.reads.data import (
    RENTABLE_KINDS,
    alert_deliveries,
    alert_events,
    alert_rules,
    availability,
    cost_per_tflop,
    history_frame,
    latest_index,
    normalise_kinds,
    prices,
    providers,
    resolve_gpus,
    tflops,
    trends,
)
from tracker.web.context import WebContext


def cheapest_by_gpu(ctx: WebContext, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per mapped GPU (catalog order): cheapest rentable and cheapest spot USD offer now."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r["gpu"] and r["currency"] == "USD":
            groups.setdefault(r["gpu"], []).append(r)
    order = {g: i for i, g in enumerate(ctx.catalog)}
    out = []
    for gpu in sorted(groups, key=lambda g: (order.get(g, len(order)), g)):
        offers = groups[gpu]  # already cheapest first
        rentable = next((o for o in offers if o["kind"] in RENTABLE_KINDS), None)
        spot = next((o for o in offers if o["kind"] == "spot"), None)
        spec = ctx.catalog.get(gpu)
        out.append({
            "gpu": gpu,
            "family": spec.family if spec else gpu,
            "name": spec.name if spec else gpu,
            "vram_gb": spec.vram_gb if spec else None,
            "best": rentable,
            "best_spot": spot,
            "offers": len(offers),
            "providers": len(cheapest_per_provider(offers)),
            "tflops": tflops(ctx, gpu),
            "cost_per_tflop_hour": cost_per_tflop(ctx, gpu, rentable["price_per_gpu_hour"]) if rentable else None,
        })
    return out


def overview(ctx: WebContext) -> dict[str, Any]:
    rows = prices(ctx, include_unmapped=False)
    trend = {t["gpu"]: t for t in trends(ctx)}
    provs = providers(ctx)
    newest = max((r["observed_at"] for r in rows), default=None)
    with ctx.reader() as r:
        note = stale_note(r) if not rows else None
    return {
        "stale_note": note,
        "gpus": cheapest_by_gpu(ctx, rows),
        "index": latest_index(ctx),
        "trends": trend,
        "providers": provs,
        "offers": sum(p["offers"] for p in provs),
        "as_of": newest,
        "basis": value_mod.DEFAULT_BASIS,
        "basis_label": value_mod.BASIS_LABELS[value_mod.DEFAULT_BASIS],
    }


def _iso(ts: datetime | str) -> str:
    """A time as the charts label it: UTC to the minute."""
    t = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return (t if t.tzinfo is not None else t.replace(tzinfo=UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 4)


def chart_series(h: History, lows: Mapping[str, Mapping[str, Any]], order: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One chart per GPU id (in ``order``): x (UTC bucket starts), the x range (half a bucket
    of margin, so a single bucket is not drawn on a millisecond axis), market min/median,
    each provider's line (null = gap), and the all-time low from the trends."""
    charts = []
    rank = {g: i for i, g in enumerate(order)}
    half = timedelta(seconds=h.resolution.seconds / 2)
    lines = h.provider_columns()
    for gpu in sorted(h.gpus, key=lambda g: (rank.get(g, len(rank)), g)):
        m = [r for r in h.market_rows if r["gpu"] == gpu]
        t = lows.get(gpu, {})
        charts.append({
            "gpu": gpu,
            "unit": h.unit,
            "resolution": h.resolution.value,
            "x": [_iso(r["time"]) for r in m],
            "x_range": [_iso(m[0]["time"] - half), _iso(m[-1]["time"] + half)] if m else None,
            "min": [_num(r["min"]) for r in m],
            "median": [_num(r["median"]) for r in m],
            "providers": {p: [_num(v) for v in values] for p, values in sorted(lines.get(gpu, {}).items())},
            "all_time_low": t.get("all_time_low"),
            "all_time_low_at": _iso(t["all_time_low_at"]) if t.get("all_time_low_at") else None,
            "all_time_low_provider": t.get("all_time_low_provider"),
        })
    return charts


RANGES = ("7d", "30d", "90d", "1y", "all")


def gpu_page(ctx: WebContext, query: str, *, since: str = "90d", every: str = "auto",
             kinds: Sequence[str] | None = None) -> dict[str, Any]:
    ids = resolve_gpus(ctx, query)
    assert ids
    ks = normalise_kinds(kinds)
    kind_arg = ks or ["all"]
    offers = prices(ctx, gpu=query)
    for o in offers:
        o["cost_per_tflop_hour"] = cost_per_tflop(ctx, o["gpu"], o["price_per_gpu_hour"], o["currency"])
    rank = {g: i for i, g in enumerate(ids)}
    trend_rows = sorted(trends(ctx, gpu=query, kinds=kind_arg), key=lambda t: rank.get(t["gpu"], len(rank)))
    h = history_frame(ctx, gpu=query, since=since, every=every, kinds=kind_arg)
    return {
        "query": query,
        "ids": ids,
        "specs": [ctx.catalog[g] for g in ids],
        "index": latest_index(ctx, query),
        "cheapest": {g["gpu"]: g["best"] for g in cheapest_by_gpu(ctx, offers) if g["best"]},
        "offers": offers,
        "trends": trend_rows,
        # over the chart's range and kinds (the default kinds when the page shows every kind)
        "availability": availability(ctx, gpu=query, since=since, kinds=ks),
        "charts": chart_series(h, {t["gpu"]: t for t in trend_rows}, ids),
        "history_notes": h.notes,
        "resolution": h.resolution.value,
        "since": since,
        "every": every,
        "kinds": ks,
        "basis": value_mod.DEFAULT_BASIS,
    }


#: How many events and deliveries the alerts page lists (the API pages further with ``limit``).
ALERT_EVENTS_SHOWN = 50
DELIVERIES_SHOWN = 50


def alerts_page(ctx: WebContext) -> dict[str, Any]:
    """Rules and their state, recent events, recent deliveries. A broken rule (a config error)
    is shown as the page's error, and the events and deliveries already stored still are."""
    error = None
    try:
        rules = alert_rules(ctx)
    except TrackerError as exc:
        rules, error = [], str(exc)
    outbox = alert_deliveries(ctx, limit=DELIVERIES_SHOWN)
    return {
        "rules": rules,
        "rules_error": error,
        "firing": [r["name"] for r in rules if r["state"] == "firing"],
        "events": alert_events(ctx, limit=ALERT_EVENTS_SHOWN),
        "deliveries": outbox["deliveries"],
        "delivery_counts": outbox["counts"],
        "events_shown": ALERT_EVENTS_SHOWN,
        "deliveries_shown": DELIVERIES_SHOWN,
    }
