"""What a rule sees: current offers from ``price_interval``, split by how far they can be trusted.

Only stored price intervals are read, so quarantined and held-back (unconfirmed jump)
observations never count: they are not in that table. Providers fall in three groups:

* **fresh**: the latest scrape succeeded and is not older than ``STALE_AFTER_INTERVALS``
  times the provider's scrape interval;
* **held**: the latest scrape failed, was skipped or was partial (``tracker.pipeline.partial``: it
  saw only part of the market) while the last good (complete) one is still recent;
* **stale**: no good scrape within that time; its offers are ignored entirely.

A rule is judged on two views: *fresh* (fresh providers only) and *combined* (fresh plus the
last good offers of held providers). A state change needs both views to agree, so a value
from a failing provider can never fire a rule, and its absence can neither fire (an ``above``
rule whose cheapest provider went down) nor resolve one (a ``below`` rule): see
``tracker.alerts.evaluate``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from db import index_rollup, reads
from db.reader import Reader
from db.reads import STALE_AFTER_INTERVALS, latest_prices, via_of
from db.spans import epoch
from scrapers.registry import market_provider
from tracker.alerts.rules import Rule
from tracker.catalog.value import breakeven_hours, months_for_hours
from tracker.config.settings import Settings


@dataclass(frozen=True, slots=True)
class View:
    rows: tuple[Mapping[str, Any], ...]  # matching current offers (``latest_prices`` rows + "metric")
    value: float | None  # the rule's aggregate of the metric
    best: Mapping[str, Any] | None  # the offer with the best metric for a renter
    available: int  # offers not marked unavailable

    @property
    def providers(self) -> list[str]:
        return sorted({r["provider"] for r in self.rows})


@dataclass(frozen=True, slots=True)
class Observation:
    now: datetime
    fresh: View
    combined: View
    status: Mapping[str, str]  # provider -> fresh | held | stale (the rule's providers only)
    stamp: str
    reference: float | None = None  # drop_pct: the aggregate at now - window
    history_low: float | None = None  # new_low: lowest value stored before the latest scrapes
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def has_fresh(self) -> bool:
        return any(s == "fresh" for s in self.status.values())

    @property
    def held(self) -> list[str]:
        return sorted(p for p, s in self.status.items() if s == "held")


def provider_status(reader: Reader, settings: Settings, now: datetime) -> dict[str, str]:
    out = {}
    for p in reads.providers(reader).values():
        limit = timedelta(seconds=STALE_AFTER_INTERVALS * settings.interval_for(p.name))
        if p.last_success_at is None or now - p.last_success_at > limit:
            out[p.name] = "stale"
        elif p.last_status == "ok":
            out[p.name] = "fresh"
        else:
            out[p.name] = "held"
    return out


def gpu_specs(settings: Settings) -> dict[str, Any]:
    """Canonical id -> catalog spec (with the user's catalog file applied)."""
    from tracker.catalog.specs import load_catalog

    return dict(load_catalog(settings.catalog_file) if settings.catalog_file else load_catalog())


def metric_value(rule: Rule, gpu: str | None, price_per_gpu_hour: float, specs: Mapping[str, Any]) -> float | None:
    """The rule's metric for one offer, or ``None`` when the catalog lacks the needed figure."""
    if rule.metric in ("price", "index"):  # an index rule's offers are priced per GPU-hour
        return price_per_gpu_hour
    spec = specs.get(gpu) if gpu else None
    if spec is None or price_per_gpu_hour <= 0:
        return None
    if rule.metric == "cost_per_tflop":
        tflops = getattr(spec, rule.basis_field or "", None)
        return price_per_gpu_hour / tflops if tflops else None
    purchase = getattr(spec, "purchase_price_usd", None)
    return months_for_hours(breakeven_hours(purchase, price_per_gpu_hour)) if purchase else None


def _matches(rule: Rule, row: Mapping[str, Any]) -> bool:
    if row.get("currency") != "USD" or row.get("price_per_gpu_hour") is None:
        return False
    return rule.min_gpu_count is None or (row.get("gpu_count") or 0) >= rule.min_gpu_count


def aggregate(rule: Rule, values: Sequence[float]) -> float | None:
    if not values:
        return None
    if rule.aggregate == "median":
        return float(statistics.median(values))
    return min(values) if rule.aggregate == "min" else max(values)


def with_free_gpus(rule: Rule, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (each with its ``metric``) left at providers where ``rule.min_available`` GPUs are free
    now: per provider, the offers with a stated free count taken best value first (cheapest; the
    longest break-even for ``higher_is_better``), counts added until they reach it; the offers from
    that one on are kept, so the best value kept is the value at which that many GPUs are free at
    that provider. Offers without a stated count (or without a metric) never count, and the kinds of
    one listing (a marketplace host's on-demand and spot prices: one sku and region) count its GPUs once."""
    if rule.min_available is None:
        return list(rows)
    by_provider: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("available_count") and r.get("metric") is not None:
            by_provider.setdefault(r["provider"], []).append(r)
    kept: list[dict[str, Any]] = []
    for offers in by_provider.values():
        offers.sort(key=lambda r: (r["metric"], r["price_per_gpu_hour"]), reverse=rule.higher_is_better)
        free, counted = 0, set()
        for i, r in enumerate(offers):
            if (r.get("sku"), r.get("region")) not in counted:
                counted.add((r.get("sku"), r.get("region")))
                free += int(r["available_count"])
            if free >= rule.min_available:
                kept.extend(offers[i:])
                break
    return kept


def index_of_offers(rows: Iterable[Mapping[str, Any]]) -> tuple[float | None, int]:
    """The rental index (median-of-medians-1, ``tracker.analysis.index``) over the offers in effect
    at one moment: each provider's median price per GPU-hour, an aggregator's offer counted as the
    cloud's (``market_provider``), then the median across providers; fractional-GPU offers left
    out. The index and the number of providers (``None`` and 0 without one)."""
    by_seller: dict[str, list[float]] = {}
    for r in rows:
        if index_rollup.fractional(float(r.get("gpu_count") or 0)):
            continue
        seller = market_provider(r["provider"], r.get(reads.VIA_KEY))
        by_seller.setdefault(seller, []).append(float(r["price_per_gpu_hour"]))
    votes = sorted(index_rollup.median_of(sorted(v)) for v in by_seller.values())
    return (index_rollup.median_of(votes) if votes else None), len(votes)


def make_view(rule: Rule, rows: Sequence[Mapping[str, Any]], specs: Mapping[str, Any]) -> View:
    kept = []
    for r in rows:
        if not _matches(rule, r):
            continue
        m = metric_value(rule, r.get("gpu"), r["price_per_gpu_hour"], specs)
        if m is None and rule.condition != "available_again":
            continue
        kept.append({**r, "metric": m})
    kept = with_free_gpus(rule, kept)
    if rule.condition == "available_again":
        # the cheapest available offer is the one worth telling about
        avail = [r for r in kept if r.get("available") is not False]
        best = min(avail, key=lambda r: r["price_per_gpu_hour"]) if avail else None
        return View(tuple(kept), float(len(avail)), best, len(avail))
    values = [r["metric"] for r in kept]
    pick = max if rule.higher_is_better else min
    best = pick(kept, key=lambda r: (r["metric"], r["price_per_gpu_hour"])) if kept else None
    value = index_of_offers(kept)[0] if rule.metric == "index" else aggregate(rule, values)
    return View(tuple(kept), value, best, sum(1 for r in kept if r.get("available") is not False))


def observe(reader: Reader, rule: Rule, settings: Settings, now: datetime, specs: Mapping[str, Any],
            *, want_history_low: bool = False) -> Observation:
    status_all = provider_status(reader, settings, now)
    status = {p: s for p, s in status_all.items() if not rule.providers or p in rule.providers}
    # every provider's last list, judged below by the same staleness rule (``provider_status``,
    # as of the evaluation's ``now``): fresh rows fire, held ones keep a rule's state
    rows = latest_prices(
        reader, gpus=list(rule.gpus), providers=list(rule.providers) or None, kinds=list(rule.kinds),
        regions=list(rule.regions) or None, now=now, include_stale=True,
    )
    fresh_rows = [r for r in rows if status.get(r["provider"]) == "fresh"]
    combined_rows = [r for r in rows if status.get(r["provider"]) in ("fresh", "held")]
    fresh, combined = make_view(rule, fresh_rows, specs), make_view(rule, combined_rows, specs)
    seen = {r["provider"] for r in combined.rows}
    providers = reads.providers(reader)
    stamp = ";".join(
        f"{p}@{providers[p].last_success_at.isoformat() if p in providers and providers[p].last_success_at else '-'}:{status[p]}"  # type: ignore[union-attr]
        for p in sorted(seen)
    )
    if not seen:
        stamp = "fresh-empty" if any(s == "fresh" for s in status.values()) else ""
    reference = None
    if rule.condition == "drop_pct" and rule.window_s:
        reference = value_at(reader, rule, settings, now - timedelta(seconds=rule.window_s), specs)
    low = history_low(reader, rule, specs) if want_history_low else None
    return Observation(now, fresh, combined, status, stamp, reference, low)


def rule_intervals(reader: Reader, rule: Rule, columns: str, *, until: datetime | None = None,
                   since_s: int | None = None) -> list[tuple[Any, ...]]:
    """``columns`` of the stored USD intervals the rule watches (``db.reads.named_intervals``),
    first seen by ``until`` and last seen from ``since_s`` (epoch seconds) on."""
    known = reads.Labels(reader)
    return reads.named_intervals(reader, columns, known.lookup("gpu", rule.gpus),
                                 known.lookup("provider", rule.providers) if rule.providers else None,
                                 known.lookup("kind", rule.kinds), known.usd,
                                 regions=rule.regions, min_gpu_count=rule.min_gpu_count,
                                 until=epoch(until) if until is not None else None, since=since_s)


def _intervals(reader: Reader, rule: Rule, until: datetime | None = None) -> list[tuple[Any, ...]]:
    """(offer_id, provider, gpu, price_per_gpu_hour, first_seen, last_seen, ends_at) of the
    stored USD intervals the rule watches (times in epoch seconds)."""
    return rule_intervals(reader, rule, "i.offer_id, lp.name, lg.name, i.price_per_gpu_hour, i.first_seen, "
                          "i.last_seen, i.ends_at", until=until)


def _held_at(reader: Reader, rule: Rule, settings: Settings, at: datetime, columns: str) -> list[tuple[Any, ...]]:
    """(provider, *``columns``) of each watched offer's newest interval in effect at ``at``: a price
    holds until it ended or until the provider's next collection attempt, at most one collection
    interval after it was last seen."""
    t = epoch(at)
    latest: dict[int, tuple[int, tuple[Any, ...]]] = {}
    for offer_id, provider, first_seen, last_seen, ends_at, *wanted in rule_intervals(
            reader, rule, f"i.offer_id, lp.name, i.first_seen, i.last_seen, i.ends_at, {columns}", until=at):
        end = last_seen + settings.interval_for(provider)
        if ends_at is not None:
            end = min(end, ends_at)
        if end >= t and (offer_id not in latest or first_seen > latest[offer_id][0]):
            latest[offer_id] = (first_seen, (provider, *wanted))
    return [row for _fs, row in latest.values()]


def value_at(reader: Reader, rule: Rule, settings: Settings, at: datetime, specs: Mapping[str, Any]) -> float | None:
    """The rule's aggregate over the prices in effect at ``at`` (``_held_at``)."""
    if rule.metric == "index":
        return index_of_offers(offers_at(reader, rule, settings, at))[0]
    held = _held_at(reader, rule, settings, at, "lg.name, i.price_per_gpu_hour")
    values = [m for _p, gpu, price in held if (m := metric_value(rule, gpu, price, specs)) is not None]
    return aggregate(rule, values)


def offers_at(reader: Reader, rule: Rule, settings: Settings, at: datetime) -> list[dict[str, Any]]:
    """The offers the rule watches in effect at ``at`` (each offer's newest interval then, held as
    ``value_at`` holds it), as rows with ``provider``, ``via``, ``gpu_count`` and ``price_per_gpu_hour``."""
    return [{"provider": provider, reads.VIA_KEY: via_of(extra), "gpu_count": count, "price_per_gpu_hour": float(price)}
            for provider, count, extra, price in _held_at(reader, rule, settings, at,
                                                         "o.gpu_count, o.extra, i.price_per_gpu_hour")]


def history_low(reader: Reader, rule: Rule, specs: Mapping[str, Any]) -> float | None:
    """Lowest value stored before each provider's latest good scrape (the baseline of ``new_low``).

    Exact for the ``min`` aggregate (the minimum over offers is never below the lowest single
    price); for ``median`` and ``max`` there is no such baseline and ``None`` is returned, so the
    first evaluation becomes the baseline.
    """
    if rule.aggregate != "min":
        return None
    latest = {p.name: epoch(p.last_success_at) for p in reads.providers(reader).values() if p.last_success_at}
    values = []
    for _offer_id, provider, gpu, price, first_seen, _last_seen, _ends_at in _intervals(reader, rule):
        cutoff = latest.get(provider)
        if cutoff is not None and first_seen >= cutoff:
            continue  # opened by the latest scrape: that is "now", not history
        m = metric_value(rule, gpu, price, specs)
        if m is not None:
            values.append(m)
    return min(values) if values else None
