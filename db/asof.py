"""Time travel: the offers on sale as of a moment, and how old the newest data is.

``prices_at(session, at)`` answers what ``db.queries.latest_prices`` answers for now, as of
``at``, with the analysis' "price at t" rule (``db.rollups.hold_end``): an interval is in
effect from its first observation until its provider's next collection attempt, at most one
collection interval after its last observation. Rows have ``latest_prices``' keys;
``observed_at`` is the last observation at or before ``at`` that the interval vouches for.
``current_prices(session, at=None, ...)`` is one or the other, for commands with ``--at``.

``stale_note(...)``: when the newest data is older than the staleness limit (the alerts'
``STALE_AFTER_INTERVALS`` collection intervals of its provider), a one-line note naming the
newest data's date and the ``--at`` option, so an imported archive's last year is not
silently "nothing on sale".

No pandas here (``db.rollups`` brings it): ``prices`` and ``value`` start fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, text
from sqlmodel import Session, select

from db import queries
from db.models import Provider
from db.types import epoch, from_epoch, utcnow

#: The alerts' staleness limit, in collection intervals of a provider (``tracker.alerts.data``).
STALE_AFTER_INTERVALS = 3
#: Collection intervals are at most a week: the SQL bound before the exact filter.
_MAX_HOLD_S = 7 * 86_400
#: ``db.rollups.DEFAULT_INTERVAL_S`` (a test keeps them equal).
DEFAULT_INTERVAL_S = 3600


def provider_intervals(session: Session) -> dict[int, int]:
    """Collection interval in seconds by provider label id (``db.rollups.provider_intervals``)."""
    rows = session.connection().execute(text(
        "SELECT l.id, p.interval_s FROM provider p JOIN label l ON l.space = 'provider' AND l.name = p.name"
    )).all()
    return {pid: int(s) if s else DEFAULT_INTERVAL_S for pid, s in rows}


def prices_at(
    session: Session,
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
    conn = session.connection()
    sql = (
        "SELECT o.provider, o.gpu, o.gpu_raw, o.gpu_count, o.gpu_memory_gb, o.kind, o.term_months, o.region, "
        "o.country, o.sku, i.price_per_hour, i.price_per_gpu_hour, c.name, i.available, i.last_seen, i.first_seen, "
        "i.ends_at, i.provider_id, i.offer_id, o.extra FROM price_interval i JOIN offer o ON o.id = i.offer_id "
        "JOIN label c ON c.id = i.currency_id WHERE i.first_seen <= :t AND i.last_seen >= :lo"
    )
    params: dict[str, Any] = {"t": t, "lo": t - _MAX_HOLD_S}
    binds = []
    for column, values, name in (("o.gpu", gpus, "gpus"), ("o.provider", providers, "providers"),
                                 ("o.kind", kinds, "kinds"), ("o.region", regions, "regions")):
        if values is not None and (values or name == "gpus"):
            sql += f" AND {column} IN :{name}"
            params[name] = list(values) or [""]
            binds.append(bindparam(name, expanding=True))
    if gpus is None and not include_unmapped:
        sql += " AND o.gpu IS NOT NULL"
    rows = conn.execute(text(sql).bindparams(*binds), params).all()
    intervals = provider_intervals(session)
    newest: dict[int, tuple[Any, ...]] = {}
    for r in rows:
        last_seen, ends_at, pid, offer_id = int(r[14]), r[16], int(r[17]), int(r[18])
        end = last_seen + intervals.get(pid, DEFAULT_INTERVAL_S)  # db.rollups.hold_end, one row
        if ends_at is not None:
            end = min(end, int(ends_at))
        if t >= end:
            continue
        have = newest.get(offer_id)
        if have is None or int(r[15]) > int(have[15]):
            newest[offer_id] = tuple(r)
    keys = ("provider", "gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "kind", "term_months", "region", "country",
            "sku", "price_per_hour", "price_per_gpu_hour", "currency", "available", "observed_at", "price_since")
    out = []
    for r in newest.values():
        d = dict(zip(keys, r[:16], strict=True))
        d["available"] = None if d["available"] is None else bool(d["available"])
        d["observed_at"] = from_epoch(min(int(d["observed_at"]), t))
        d["price_since"] = from_epoch(int(d["price_since"]))
        mark = queries.replay_mark(r[19])
        d["replay"] = mark is not None
        d["recorded"], d["fixture"] = (mark["recorded"], mark["fixture"]) if mark else (None, None)
        out.append(d)
    out.sort(key=lambda d: (d["price_per_gpu_hour"] is None, d["price_per_gpu_hour"] or 0.0, d["provider"], d["sku"]))
    return out


def current_prices(session: Session, at: datetime | None = None, **filters: Any) -> list[dict[str, Any]]:
    """``latest_prices`` now, or ``prices_at`` as of ``at``."""
    if at is None:
        return queries.latest_prices(session, **filters)
    return prices_at(session, at, **filters)


def newest_data(session: Session, providers: Sequence[str] | None = None) -> Provider | None:
    """The provider whose last successful collection is the newest (of ``providers``, or all)."""
    rows = [p for p in session.exec(select(Provider)).all()
            if p.last_success_at is not None and (not providers or p.name in providers)]
    return max(rows, key=lambda p: p.last_success_at) if rows else None  # type: ignore[arg-type,return-value]


def stale_note(session: Session, interval_of: Any, *, providers: Sequence[str] | None = None,
               now: datetime | None = None) -> str | None:
    """A note when the newest stored data is older than the staleness limit, else ``None``.

    ``interval_of(provider) -> seconds``: the provider's collection interval (from the settings)."""
    now = now or utcnow()
    p = newest_data(session, providers)
    if p is None or p.last_success_at is None:
        return None
    limit = timedelta(seconds=STALE_AFTER_INTERVALS * float(interval_of(p.name)))
    age = now - p.last_success_at
    if age <= limit:
        return None
    when = p.last_success_at
    hours = age.total_seconds() / 3600
    old = f"{hours / 24:.0f} days" if hours >= 48 else f"{hours:.0f} hours"
    return (f"the newest data is from {when:%Y-%m-%d %H:%M} UTC ({p.name}, {old} old; older than "
            f"{STALE_AFTER_INTERVALS} collection intervals): nothing is current. Ask about that time with "
            f"--at {when:%Y-%m-%dT%H:%M}Z, or collect fresh prices with `gpu-tracker scrape`")
