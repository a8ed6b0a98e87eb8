"""Query functions: the reads and writes the application makes through the ORM.

The current prices (``latest_prices``) are read in Core by ``db.asof`` and re-exported here,
so the commands that only read them start without the ORM.

Writers take an open ``Session`` and never commit: the caller owns the transaction, so one
provider's batch is all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, text
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db import labels
from db.asof import current_condition, latest_prices, replay_mark  # noqa: F401  (re-exported: the read path lives there)
from db.models import Offer, Provider, ScrapeRun
from db.types import from_epoch

Identity = tuple[str, str, str, int]
PRICE_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class StoreStats:
    offers_seen: int
    new_offers: int
    prices_changed: int
    unchanged: int
    unpriced: int
    #: Offers seen before, but not by the previous collection attempt (back after a gap).
    returned: int = 0


def ensure_provider(session: Session, name: str, display_name: str = "") -> Provider:
    provider = session.get(Provider, name)
    if provider is None:
        provider = Provider(name=name, display_name=display_name or name)
        session.add(provider)
        session.flush()
    elif display_name and provider.display_name != display_name:
        provider.display_name = display_name
    return provider


def ensure_providers(session: Session, display_names: Mapping[str, str]) -> None:
    """``ensure_provider`` of several providers (name -> display name) in two or three statements,
    for a cycle that starts them all at once."""
    table = Provider.__table__  # type: ignore[attr-defined]
    conn = session.connection()
    stored = dict(conn.execute(sql_select(table.c.name, table.c.display_name)
                               .where(table.c.name.in_(list(display_names)))).all())
    new = [{"name": n, "display_name": d or n} for n, d in display_names.items() if n not in stored]
    if new:
        conn.execute(table.insert(), new)
    renamed = [{"b_name": n, "display_name": d} for n, d in display_names.items() if d and n in stored and stored[n] != d]
    if renamed:
        conn.execute(table.update().where(table.c.name == bindparam("b_name")).values(display_name=bindparam("display_name")),
                     renamed)


def _identity(o: Offer) -> Identity:
    return (o.sku, o.region, o.kind, o.term_months)


def offers_by_identity(session: Session, provider: str) -> dict[Identity, Offer]:
    rows = session.exec(select(Offer).where(Offer.provider == provider)).all()
    return {_identity(o): o for o in rows}


def previous_prices(session: Session, provider: str, currencies: Mapping[Identity, str] | None = None) -> dict[Identity, float]:
    """Last stored whole-instance price per offer identity (for outlier checks), from the
    current state: one row per offer of ``provider``, however long the history.

    ``currencies``: the currency each offer is now priced in; a stored price in another one
    (a rate configured since, say) is left out, so a conversion is never judged a price jump."""
    stmt = text(
        "SELECT o.sku, o.region, o.kind, o.term_months, i.price_per_hour, c.name FROM price_interval_open i "
        "JOIN label l ON l.id = i.provider_id JOIN label c ON c.id = i.currency_id "
        "JOIN offer o ON o.id = i.offer_id WHERE l.space = 'provider' AND l.name = :p"
    )
    return {(sku, region, kind, term): price for sku, region, kind, term, price, currency
            in session.connection().execute(stmt, {"p": provider})
            if currencies is None or currencies.get((sku, region, kind, term), currency) == currency}


def pending_jumps(session: Session, provider: str, marker: str = "held until a second scrape confirms it") -> dict[Identity, float]:
    """Prices held for confirmation (reason ending in ``marker``) in the provider's latest good run.

    One statement: it runs in every collection's write transaction, so the latest good run is
    found by walking the (provider, started_at) index backwards from the newest run, not by
    scanning every run the provider ever had."""
    rows = session.connection().execute(text(
        "SELECT sku, region, kind, term_months, price_per_hour, reason FROM quarantine WHERE run_id = "
        "(SELECT id FROM scrape_run WHERE provider = :p AND status IN ('ok', 'partial') ORDER BY started_at DESC, id DESC LIMIT 1) "
        "AND price_per_hour IS NOT NULL"
    ), {"p": provider})
    return {(sku, region, kind, term): price for sku, region, kind, term, price, reason in rows
            if (reason or "").endswith(marker)}


def market_medians(session: Session, min_offers: int = 3) -> dict[str, float]:
    """Median current USD price per GPU-hour of every GPU with at least ``min_offers`` offers
    (from the current state, not from history: the offers ``latest_prices`` shows, read as
    two columns, since every provider's validation asks for it). Stale providers count: this is
    a plausibility check on what the market last listed, not an answer to "now"."""
    import statistics

    where, params = current_condition(session, include_stale=True)
    rows = session.connection().execute(text(
        "SELECT o.gpu, i.price_per_gpu_hour FROM price_interval_open i "
        f"JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id WHERE {where} "
        "AND o.gpu IS NOT NULL AND c.name = 'USD'"), params).all()
    by_gpu: dict[str, list[float]] = {}
    for gpu, price in rows:
        by_gpu.setdefault(gpu, []).append(price)
    return {gpu: statistics.median(ps) for gpu, ps in by_gpu.items() if len(ps) >= min_offers}


# --- reads ---------------------------------------------------------------------------------


def offer_extra_field(session: Session, providers: Sequence[str], field: Mapping[str, str],
                      gpus: Sequence[str] | None = None) -> dict[tuple[str, str, str, str, int], Any]:
    """``field[provider]`` of each offer's ``extra``, keyed like a ``latest_prices`` row
    (provider, sku, region, kind, term_months); offers without the field are left out."""
    if not providers:
        return {}
    query = select(Offer.provider, Offer.sku, Offer.region, Offer.kind, Offer.term_months, Offer.extra).where(
        col(Offer.provider).in_(list(providers)))
    if gpus is not None:
        query = query.where(col(Offer.gpu).in_(list(gpus) or [""]))
    out: dict[tuple[str, str, str, str, int], Any] = {}
    for provider, sku, region, kind, term, extra in session.exec(query).all():
        value = (extra or {}).get(field.get(provider, ""))
        if value is not None:
            out[(provider, sku, region, kind, term)] = value
    return out


def provider_rows(session: Session) -> dict[str, Provider]:
    return {p.name: p for p in session.exec(select(Provider)).all()}


def last_runs(session: Session, limit_per_provider: int = 1) -> dict[str, list[ScrapeRun]]:
    runs = session.exec(select(ScrapeRun).order_by(col(ScrapeRun.provider), col(ScrapeRun.id).desc())).all()
    out: dict[str, list[ScrapeRun]] = {}
    for r in runs:
        bucket = out.setdefault(r.provider, [])
        if len(bucket) < limit_per_provider:
            bucket.append(r)
    return out


def unmapped_gpu_names(session: Session) -> list[dict[str, Any]]:
    """Raw GPU names stored without a canonical id, with how many offers carry each."""
    stmt = (
        select(Offer.gpu_raw, func.count(), func.min(Offer.provider))
        .where(col(Offer.gpu).is_(None))
        .group_by(Offer.gpu_raw)
        .order_by(func.count().desc(), Offer.gpu_raw)
    )
    return [{"gpu_raw": raw, "offers": n, "example_provider": p} for raw, n, p in session.exec(stmt).all()]


def offer_mapping_counts(session: Session) -> tuple[int, int]:
    """(offers without a canonical GPU, all offers): the unmapped share ``catalog --unmapped`` reports."""
    total = session.exec(select(func.count()).select_from(Offer)).one()
    unmapped = session.exec(select(func.count()).select_from(Offer).where(col(Offer.gpu).is_(None))).one()
    return int(unmapped), int(total)


def row_counts(engine: Engine) -> dict[str, int]:
    """``db.plain_reads.row_counts`` on a connection of ``engine``."""
    from db import plain_reads
    from db.reader import reader_of

    with engine.connect() as conn:
        return plain_reads.row_counts(reader_of(conn))


def recent_runs(
    session: Session, *, limit: int = 50, providers: Sequence[str] | None = None, statuses: Sequence[str] | None = None
) -> list[ScrapeRun]:
    """The newest scrape runs first (optionally of some providers / with some statuses)."""
    stmt = select(ScrapeRun)
    if providers:
        stmt = stmt.where(col(ScrapeRun.provider).in_(list(providers)))
    if statuses:
        stmt = stmt.where(col(ScrapeRun.status).in_(list(statuses)))
    return list(session.exec(stmt.order_by(col(ScrapeRun.id).desc()).limit(limit)).all())


def latest_run_per_provider(session: Session) -> dict[str, ScrapeRun]:
    """Each provider's newest scrape run (one indexed query, unlike ``last_runs``)."""
    newest = select(func.max(ScrapeRun.id)).group_by(ScrapeRun.provider).scalar_subquery()
    return {r.provider: r for r in session.exec(select(ScrapeRun).where(col(ScrapeRun.id).in_(newest))).all()}


def current_offer_counts(session: Session) -> dict[str, int]:
    """Per provider: priced offers listed by its latest successful scrape, however old (the
    providers view shows it beside the collection's age)."""
    where, params = current_condition(session, include_stale=True)
    rows = session.connection().execute(
        text("SELECT l.name, COUNT(*) FROM price_interval_open i JOIN label l ON l.id = i.provider_id "
             f"WHERE {where} GROUP BY l.name"),
        params,
    ).all()
    return {p: n for p, n in rows}


def first_price_at(session: Session, gpus: Sequence[str] | None = None) -> datetime | None:
    """When the oldest stored price (of ``gpus``, when given) was first seen (roll-ups count:
    raw intervals past the retention time are gone, their buckets are not)."""
    conn = session.connection()
    ids = labels.lookup(conn, "gpu", gpus) if gpus is not None else sorted(labels.names(conn, "gpu"))
    if not ids:
        return None
    raw = conn.execute(
        text("SELECT MIN(first_seen) FROM price_interval WHERE gpu_id IN :g").bindparams(bindparam("g", expanding=True)),
        {"g": ids},
    ).scalar()
    rolled = conn.execute(
        text("SELECT MIN(bucket) FROM rollup_day WHERE gpu_id IN :g").bindparams(bindparam("g", expanding=True)),
        {"g": ids},
    ).scalar()
    if raw is None and rolled is None:
        return None
    if raw is not None and (rolled is None or raw - rolled < 86_400):
        return from_epoch(raw)  # the day's roll-up starts at midnight; the raw time is exact
    return from_epoch(rolled)


@dataclass(frozen=True, slots=True)
class IntervalRow:
    """One stored interval with names and datetimes (for inspection, exports and tests)."""

    id: int
    offer_id: int
    provider: str
    gpu: str | None
    kind: str
    currency: str
    price_per_hour: float
    price_per_gpu_hour: float
    available: bool | None
    first_seen: datetime
    last_seen: datetime
    ends_at: datetime | None
    observations: int


def interval_rows(session: Session, *, provider: str | None = None, offer_id: int | None = None) -> list[IntervalRow]:
    """Stored intervals in id order (of one provider or offer when given)."""
    conn = session.connection()
    names = {i: n for (_s, n), i in labels.all_labels(conn).items()}
    sql = ("SELECT i.id, i.offer_id, i.provider_id, i.gpu_id, i.kind_id, i.currency_id, i.price_per_hour, "
           "i.price_per_gpu_hour, i.available, i.first_seen, i.last_seen, i.ends_at, i.observations "
           "FROM price_interval i WHERE 1 = 1")
    params: dict[str, Any] = {}
    if provider is not None:
        ids = labels.lookup(conn, "provider", [provider])
        sql += " AND i.provider_id = :p"
        params["p"] = ids[0] if ids else -1
    if offer_id is not None:
        sql += " AND i.offer_id = :o"
        params["o"] = offer_id
    out = []
    for r in conn.execute(text(sql + " ORDER BY i.id"), params).all():
        out.append(IntervalRow(
            r[0], r[1], names[r[2]], names.get(r[3]) if r[3] is not None else None, names[r[4]], names[r[5]], r[6], r[7],
            None if r[8] is None else bool(r[8]), from_epoch(r[9]), from_epoch(r[10]),
            from_epoch(r[11]) if r[11] is not None else None, r[12],
        ))
    return out
