"""The offers on sale now or as of a moment, and how old the newest data is: the read path of
``gpu-tracker prices``, written in SQLAlchemy Core.

``latest_prices(conn, ...)``: every offer listed by its provider's latest successful
collection, cheapest per GPU-hour first. ``prices_at(conn, at)`` answers the same as of
``at``, with the analysis' "price at t" rule (``db.rollups.hold_end``): an interval is in
effect from its first observation until its provider's next collection attempt, at most one
collection interval after its last observation; ``observed_at`` is then the last observation
at or before ``at`` that the interval vouches for. ``current_prices(conn, at=None, ...)`` is
one or the other, for commands with ``--at``.

"Now" is one rule (``ProviderState.fresh``): what a provider listed last answers "now" while its
collection is no older than ``STALE_AFTER_INTERVALS`` of its collection intervals (the alerts'
staleness rule); an older one is history, shown only when asked (``include_stale``, ``--at``).
``stale_note(...)``: when nothing is current although data is stored, a one-line note naming
the newest data's date and the options that show it, so an imported archive's last year is
not silently "nothing on sale".

Every function takes a ``db.reader.Reader`` (``db.direct``: the DB-API driver opened from the
store URL), a Core ``Connection`` or an ORM ``Session`` (its connection is used); the SQL text
is ``db.sql``'s either way. Neither SQLAlchemy, the ORM, ``db.models`` nor pandas is imported
here: importing them is most of what a command pays to start, and ``prices`` needs none of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from db import sql as q
from db.reader import Reader, reader_of, utc_datetime
from db.spans import DEFAULT_INTERVAL_S, hold_end
from db.via import via_of
from db.times import epoch, from_epoch, utcnow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

    Source = Reader | Connection | Session

#: The staleness limit, in collection intervals of a provider: a provider whose newest data is
#: older counts as stale (the alerts' freshness, ``tracker.alerts.data``; this read's note).
STALE_AFTER_INTERVALS = 3
#: Collection intervals are at most a week: the SQL bound before the exact filter.
_MAX_HOLD_S = 7 * 86_400
#: The columns of a price row, in the order both queries select them.
PRICE_KEYS = ("provider", "gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "kind", "term_months", "region", "country",
              "sku", "price_per_hour", "price_per_gpu_hour", "currency", "available", "observed_at", "price_since",
              "vcpus", "ram_gb")

class ProviderState(NamedTuple):
    """What the read path needs of a ``provider`` row."""

    name: str
    last_status: str | None
    last_success_at: datetime | None
    interval_s: int = DEFAULT_INTERVAL_S
    #: When its newest successful collection ran (live, or a replay of recordings); None when
    #: everything it has came from imported archives.
    collected_at: datetime | None = None

    def fresh(self, now: datetime) -> bool:
        """Whether what it listed last still answers "now": its newest collection ran (or, for
        a provider known only from imports, its newest snapshot was taken) no longer than
        ``STALE_AFTER_INTERVALS`` of its collection intervals ago, the alerts' staleness rule.
        A replay counts as a collection when it ran, its rows say which recording they are."""
        basis = self.collected_at or self.last_success_at
        return basis is not None and now - basis <= timedelta(seconds=STALE_AFTER_INTERVALS * self.interval_s)


def provider_states(source: Source) -> list[ProviderState]:
    """Every stored provider's name, last status, last successful collection, interval and the
    time its newest collection ran."""
    rows = reader_of(source).rows(q.PROVIDER_STATES)
    return [ProviderState(name, status, utc_datetime(at), int(every) if every else DEFAULT_INTERVAL_S,
                          utc_datetime(ran) if ran is not None else None)
            for name, status, at, every, ran in rows]


def provider_intervals(source: Source) -> dict[int, int]:
    """Collection interval in seconds by provider label id (``db.rollups.provider_intervals``)."""
    rows = reader_of(source).rows(q.PROVIDER_INTERVALS)
    return {pid: int(s) if s else DEFAULT_INTERVAL_S for pid, s in rows}


def replay_mark(extra: Any) -> dict[str, Any] | None:
    """``{"recorded": ..., "fixture": ...}`` when the offer's price came from a replayed recording, else ``None``.

    Replay stores it in the offer's ``extra["replay"]`` (``tracker.pipeline.replay``); a later live
    collection of the same offer rewrites ``extra`` without it.
    """
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except ValueError:
            return None
    mark = extra.get("replay") if isinstance(extra, dict) else None
    return {"recorded": mark.get("recorded"), "fixture": mark.get("fixture")} if isinstance(mark, dict) else None


def _extra_dict(extra: Any) -> dict[str, Any]:
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except ValueError:
            return {}
    return extra if isinstance(extra, dict) else {}


#: Price-row fields of a price converted to USD (``tracker.pipeline.normalise``): the price as
#: listed, its currency, the rate and the day it was read. ``None`` for a price listed in USD.
CONVERSION_KEYS = ("original_price_per_hour", "original_currency", "usd_rate", "usd_rate_date")


def conversion_of(extra: Any) -> dict[str, Any]:
    """``CONVERSION_KEYS`` of an offer's ``extra`` (all ``None`` unless its price was converted)."""
    e = _extra_dict(extra)
    if not e.get("original_currency"):
        return dict.fromkeys(CONVERSION_KEYS)
    return {k: e.get(k) for k in CONVERSION_KEYS}


def conversions(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, float | None, str | None, int]]:
    """(currency, rate, rate date, prices) of each conversion the price rows carry, for a note
    beside them: a converted price is never shown without its rate and date."""
    seen: dict[tuple[str, float | None, str | None], int] = {}
    for r in rows:
        if r.get("original_currency"):
            key = (r["original_currency"], r.get("usd_rate"), r.get("usd_rate_date"))
            seen[key] = seen.get(key, 0) + 1
    return [(c, rate, on, n) for (c, rate, on), n in sorted(seen.items(), key=lambda kv: (kv[0][0], str(kv[0][2])))]


def price_source(row: dict[str, Any], imported: str | None = None) -> str:
    """Where a price row came from, as every surface shows it: ``live``; ``replay 2025-06-21``
    (the recording's date), ``replay (handmade)``; ``import <archive>`` for a provider known only
    from an imported archive (``imported``: its newest import's label)."""
    if imported is not None:
        return f"import {imported}"
    if not row.get("replay"):
        return "live"
    if row.get("fixture") not in (None, "recording"):
        return f"replay ({row['fixture']})"
    return f"replay {row['recorded']}" if row.get("recorded") else "replay (undated)"


def imported_sources(source: Source, states: Sequence[ProviderState] | None = None) -> dict[str, str]:
    """``{provider: archive}`` for the providers whose data all came from imports (no collection
    run), with the label of each one's newest import (``import of <label> (...)``). ``states``:
    ``provider_states`` when the caller has read them already."""
    conn = reader_of(source)
    states = provider_states(conn) if states is None else states
    collected = {p.name for p in states if p.collected_at is not None}
    out: dict[str, str] = {}
    for provider, message in conn.rows(q.LATEST_IMPORTS):
        if provider not in collected and message:
            out[provider] = message.removeprefix(q.IMPORT_NOTE).split(" (", 1)[0]
    return out


def _price_row(values: Sequence[Any], extra: Any, imported: dict[str, str], now: datetime,
               available_count: int | None = None) -> dict[str, Any]:
    d = dict(zip(PRICE_KEYS, values, strict=True))
    d["available"] = None if d["available"] is None else bool(d["available"])
    # GPUs free now: the store keeps the newest count only, so a past moment (``prices_at``) has none
    d["available_count"] = None if available_count is None else int(available_count)
    d["observed_at"], d["price_since"] = from_epoch(d["observed_at"]), from_epoch(d["price_since"])
    mark = replay_mark(extra)
    d["via"] = via_of(extra)
    d.update(conversion_of(extra))
    d["replay"] = mark is not None
    d["recorded"], d["fixture"] = (mark["recorded"], mark["fixture"]) if mark else (None, None)
    d["source"] = price_source(d, imported.get(d["provider"]))
    d["age_s"] = max(0, int((now - d["observed_at"]).total_seconds())) if d["observed_at"] is not None else None
    return d


def _offer_terms(gpus: Sequence[str] | None, kinds: Sequence[str] | None, regions: Sequence[str] | None,
                 params: dict[str, Any], providers: Sequence[str] | None = None) -> str:
    """``AND`` terms on the ``offer`` alias ``o`` (an empty ``gpus`` list matches nothing)."""
    sql = ""
    for column, values, name in (("o.gpu", gpus, "gpus"), ("o.provider", providers, "providers"),
                                 ("o.kind", kinds, "kinds"), ("o.region", regions, "regions")):
        if values is not None and (values or name == "gpus"):
            sql += f" AND {column} IN :{name}"
            params[name] = list(values) or [""]
    return sql


def current_condition(source: Source, providers: Sequence[str] | None = None, *, now: datetime | None = None,
                      include_stale: bool = False,
                      states: Sequence[ProviderState] | None = None) -> tuple[str, dict[str, Any]]:
    """SQL matching ``price_interval_open`` rows (alias ``i``) listed by their provider's latest successful collection,
    if that collection still answers "now" (``ProviderState.fresh``) or ``include_stale``.
    ``states``: ``provider_states`` when the caller has read them already."""
    conn = reader_of(source)
    now = now or utcnow()
    ids = {n: i for i, n in conn.rows(q.LABEL_NAMES, {"s": "provider"})}
    parts, params = [], {}
    for k, p in enumerate(provider_states(conn) if states is None else states):
        if p.last_success_at is None or p.name not in ids or (providers and p.name not in providers):
            continue
        if not include_stale and not p.fresh(now):
            continue
        # after a complete collection, what it listed is open; after a failed one, the last good
        # list was closed by the failure and is still shown (held); after a partial one
        # (``tracker.pipeline.partial``), the last complete list with what was seen since
        if p.last_status in ("failed", "skipped", "partial"):
            parts.append(f"(i.provider_id = :p{k} AND i.last_seen >= :t{k})")
        else:
            parts.append(f"(i.provider_id = :p{k} AND i.last_seen = :t{k} AND i.ends_at IS NULL)")
        params[f"p{k}"], params[f"t{k}"] = ids[p.name], epoch(p.last_success_at)
    return ("(" + " OR ".join(parts) + ")" if parts else "1 = 0"), params


def latest_prices(
    source: Source,
    *,
    gpus: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    include_unmapped: bool = True,
    now: datetime | None = None,
    include_stale: bool = False,
) -> list[dict[str, Any]]:
    """Current price of every offer listed by its provider's latest successful scrape,
    cheapest per GPU-hour first: the one answer to "what does it cost now" that every surface
    gives (``prices``, ``value``, ``trends``' current, ``tco`` and ``recommend``'s rent, alerts,
    the dashboard, the API, MCP and exports).

    ``replay`` says the price came from a replayed recording; ``recorded`` is then that
    recording's date as its manifest gives it (``observed_at`` is its start) and ``fixture``
    what it is (recording, handmade, api-reference).

    "Current" means the offer's newest interval (``price_interval_open``) was seen by the provider's
    latest successful collection (``last_success_at``): an offer missing from it is no
    longer on sale and is not shown. A provider whose latest collection is older than its
    staleness limit (``ProviderState.fresh``) answers nothing now unless ``include_stale``: a
    year-old imported price is history, never today's. Each row says its ``source`` (live,
    replay of a dated recording, import of an archive) and ``age_s`` (seconds since observed).
    """
    conn = reader_of(source)
    now = now or utcnow()
    states = provider_states(conn)  # read once: the "now" rule and the rows' sources both need them
    where, params = current_condition(conn, providers, now=now, include_stale=include_stale, states=states)
    sql = q.LATEST_PRICES.format(where=where)
    sql += _offer_terms(gpus, kinds, regions, params)
    if gpus is None and not include_unmapped:
        sql += " AND o.gpu IS NOT NULL"
    sql += " ORDER BY i.price_per_gpu_hour, o.provider, o.sku"
    rows = conn.rows(sql, params)
    imported = imported_sources(conn, states)
    return [_price_row(row[:18], row[18], imported, now, row[19]) for row in rows]


def prices_at(
    source: Source,
    at: datetime,
    *,
    gpus: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    include_unmapped: bool = True,
) -> list[dict[str, Any]]:
    """Every offer's price in effect at ``at``, cheapest per GPU-hour first (see the module docstring)."""
    t = epoch(at)
    conn = reader_of(source)
    sql = q.PRICES_AT
    params: dict[str, Any] = {"t": t, "lo": t - _MAX_HOLD_S}
    sql += _offer_terms(gpus, kinds, regions, params, providers)
    if gpus is None and not include_unmapped:
        sql += " AND o.gpu IS NOT NULL"
    rows = conn.rows(sql, params)
    intervals = provider_intervals(conn)
    newest: dict[int, tuple[Any, ...]] = {}
    for r in rows:
        last_seen, ends_at, pid, offer_id = int(r[14]), r[18], int(r[19]), int(r[20])
        if t >= hold_end(last_seen, ends_at, intervals.get(pid, DEFAULT_INTERVAL_S)):
            continue
        have = newest.get(offer_id)
        if have is None or int(r[15]) > int(have[15]):
            newest[offer_id] = tuple(r)
    imported = imported_sources(conn)
    out = [_price_row((*r[:14], min(int(r[14]), t), *r[15:18]), r[21], imported, at) for r in newest.values()]
    out.sort(key=lambda d: (d["price_per_gpu_hour"] is None, d["price_per_gpu_hour"] or 0.0, d["provider"], d["sku"]))
    return out


def current_prices(source: Source, at: datetime | None = None, *, include_stale: bool = False,
                   **filters: Any) -> list[dict[str, Any]]:
    """``latest_prices`` now (stale providers only with ``include_stale``), or ``prices_at`` as of ``at``."""
    if at is None:
        return latest_prices(source, include_stale=include_stale, **filters)
    return prices_at(source, at, **filters)


def newest_data(source: Source, providers: Sequence[str] | None = None,
                states: Sequence[ProviderState] | None = None) -> ProviderState | None:
    """The provider whose last successful collection is the newest (of ``providers``, or all;
    ``states``: ``provider_states`` when the caller has read them already)."""
    rows = [p for p in (provider_states(source) if states is None else states)
            if p.last_success_at is not None and (not providers or p.name in providers)]
    return max(rows, key=lambda p: p.last_success_at) if rows else None  # type: ignore[arg-type,return-value]


def stale_note(source: Source, *, providers: Sequence[str] | None = None, now: datetime | None = None) -> str | None:
    """A note when no provider (of ``providers``) answers "now" (``ProviderState.fresh``) although
    data is stored, naming the newest data's date and how to ask about it, else ``None``."""
    now = now or utcnow()
    states = [p for p in provider_states(source) if not providers or p.name in providers]
    if any(p.fresh(now) for p in states):
        return None
    p = newest_data(source, providers, states)
    if p is None or p.last_success_at is None:
        return None
    when = p.last_success_at
    hours = (now - when).total_seconds() / 3600
    old = f"{hours / 24:.0f} days" if hours >= 48 else f"{hours:.0f} hours"
    return (f"the newest data is from {when:%Y-%m-%d %H:%M} UTC ({p.name}, {old} old; older than "
            f"{STALE_AFTER_INTERVALS} collection intervals): nothing is current. Ask about that time with "
            f"--at {when:%Y-%m-%dT%H:%M}Z, show the last prices anyway with --include-stale, or collect "
            "fresh prices with `gpu-tracker scrape`")
