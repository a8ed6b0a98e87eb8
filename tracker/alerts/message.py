"""What an alert says: the rule, the GPU, the offer behind the value, the value, the threshold,
the previous value, why, and a link to the dashboard's GPU page when ``web.base_url`` is set.

``render`` returns the title and text stored in ``alert_event`` and a JSON document (the
``details`` column, and the body of a ``webhook+`` POST). None of it ever holds a channel URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

from tracker.alerts.rules import DEFAULT_BASIS, Rule
from tracker.config.settings import Settings

SCHEMA_VERSION = 1


def fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if unit == "available offers":
        return f"{value:g}"
    text = f"{value:.2f}" if abs(value) >= 1 or value == 0 else f"{value:.4g}"
    return f"{text} {unit}".strip()


def dashboard_link(settings: Settings | None, gpu: str | None) -> str | None:
    base = settings.web.base_url if settings is not None else None
    if not base or not gpu:
        return None
    return f"{base.rstrip('/')}/gpu/{quote(gpu, safe='')}"


def _offer_text(offer: Mapping[str, Any]) -> str:
    where = offer.get("region") or "-"
    if offer.get("country"):
        where += f" ({offer['country']})"
    kind = str(offer.get("kind", "")).replace("_", "-")
    if offer.get("term_months"):
        kind += f" {offer['term_months']}-month"
    count = offer.get("gpu_count")
    count_txt = f"{count:g}x " if isinstance(count, (int, float)) else ""
    avail = "" if offer.get("available") is not False else ", listed as unavailable"
    if offer.get("available") and isinstance(offer.get("available_count"), int):
        avail = f", {offer['available_count']} GPUs free"
    return (f"{offer.get('provider')} / {where} / {kind}: {count_txt}{offer.get('gpu')} ({offer.get('sku')}) at "
            f"{offer.get('price_per_gpu_hour', 0):.4g} USD/GPU-h, {offer.get('price_per_hour', 0):.4g} USD/h{avail}"
            f"{replay_note(offer)}")


def replay_note(offer: Mapping[str, Any]) -> str:
    """", REPLAYED from the 2025-06-21 recording, not a live price" for a replayed offer, else ""."""
    if not offer.get("replay"):
        return ""
    fixture = offer.get("fixture") or "recording"
    if fixture == "recording" and offer.get("recorded"):
        return f", REPLAYED from the {offer['recorded']} recording, not a live price"
    return f", REPLAYED from a {fixture}{' recording' if fixture == 'recording' else ' sample'} (undated), not a live price"


def _offer_json(offer: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if offer is None:
        return None
    keys = ("provider", "gpu", "gpu_raw", "gpu_count", "kind", "term_months", "region", "country", "sku",
            "price_per_hour", "price_per_gpu_hour", "currency", "available", "metric", "replay", "recorded", "fixture")
    out = {k: offer.get(k) for k in keys}
    for k in ("observed_at", "price_since"):
        v = offer.get(k)
        out[k] = v.isoformat() if isinstance(v, datetime) else v
    return out


def _why(rule: Rule, kind: str, value: float | None, threshold: float | None, reference: float | None) -> str:
    unit = rule.unit
    what = f"the {rule.aggregate} {rule.metric.replace('_', ' ')}"
    if rule.metric == "cost_per_tflop":
        what += f" ({rule.basis or DEFAULT_BASIS})"
    what += f" of {rule.gpu_label}"
    if rule.condition == "available_again":
        if kind == "resolved":
            return f"no {rule.gpu_label} offer is listed as available any more"
        return f"{fmt(value, unit)} {rule.gpu_label} offer(s) are listed as available after none were"
    if rule.condition == "new_low":
        return f"{what} is {fmt(value, rule.unit)}, a new all-time low (previous low {fmt(threshold, unit)})"
    if rule.condition == "drop_pct":
        drop = (reference - value) / reference * 100 if reference and value is not None else None
        span = rule.describe().rsplit(" over ", 1)[-1]
        verb = "dropped" if kind == "fired" else "is no longer down"
        return (f"{what} {verb} {drop:.1f}% over {span} (from {fmt(reference, unit)} to {fmt(value, unit)}; "
                f"threshold {rule.threshold:g}%)" if drop is not None else f"{what}: no reference value")
    if kind == "resolved":
        margin = rule.margin(threshold)
        edge = f"{threshold:g}" + (f" with a re-arm margin of {margin:g}" if margin else "")
        side = "no longer below" if rule.condition == "below" else "no longer above"
        return f"{what} is {fmt(value, unit)}, {side} {edge}"
    return f"{what} is {fmt(value, unit)}, {rule.condition} the threshold {fmt(threshold, unit)}"


def render(
    rule: Rule,
    kind: str,
    *,
    value: float | None,
    threshold: float | None,
    previous: float | None,
    best: Mapping[str, Any] | None,
    offers_considered: int = 0,
    providers: list[str] | None = None,
    held: list[str] | None = None,
    reference: float | None = None,
    settings: Settings | None = None,
    now: datetime | None = None,
) -> tuple[str, str, dict[str, Any]]:
    """(title, text, details) of one event; ``kind`` is fired, resolved or test."""
    gpu = (best or {}).get("gpu") or (rule.gpus[0] if len(rule.gpus) == 1 else None)
    link = dashboard_link(settings, gpu)
    head = {"fired": "fired", "resolved": "resolved", "test": "test message"}[kind]
    title = f"gpu-tracker: {rule.name} {head}"
    if kind != "test" and value is not None:
        title += f": {rule.gpu_label} {fmt(value, rule.unit)}"
    lines = []
    if kind == "test":
        lines.append(f"Test message for alert rule {rule.name} ({rule.describe()}). If you can read this, the channel works.")
        if value is not None:
            lines.append(f"Current value: {fmt(value, rule.unit)}.")
    else:
        lines.append(f"Rule {rule.name} {head}: {_why(rule, kind, value, threshold, reference)}.")
    if best is not None:
        label = "Cheapest available offer" if rule.condition == "available_again" else "Best offer"
        lines.append(f"{label}: {_offer_text(best)}.")
    if rule.condition not in ("available_again",):
        lines.append(f"Value: {fmt(value, rule.unit)}; threshold: "
                     f"{fmt(threshold, '%' if rule.condition == 'drop_pct' else rule.unit)}; "
                     f"previous value: {fmt(previous, rule.unit)}.")
    if offers_considered:
        lines.append(f"Offers considered: {offers_considered} from {len(providers or [])} provider(s)"
                     f"{' (' + ', '.join(providers or []) + ')' if providers else ''}.")
    if held:
        lines.append(f"Not counted (latest scrape failed): {', '.join(held)}.")
    if link:
        lines.append(f"Dashboard: {link}")
    body = "\n".join(lines)
    details: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "kind": kind,
        "rule": rule.name,
        "gpu": list(rule.gpu_query),
        "gpu_ids": list(rule.gpus),
        "metric": rule.metric,
        "basis": rule.basis or (DEFAULT_BASIS if rule.metric == "cost_per_tflop" else None),
        "aggregate": rule.aggregate,
        "condition": rule.condition,
        "unit": rule.unit,
        "value": value,
        "threshold": threshold,
        "previous_value": previous,
        "reference_value": reference,
        "offer": _offer_json(best),
        "offers_considered": offers_considered,
        "providers": providers or [],
        "providers_not_counted": held or [],
        "link": link,
        "at": now.isoformat() if now else None,
        "title": title,
        "message": body,
    }
    return title, body, details
