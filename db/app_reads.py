"""The application's reads of the store (collection, alerts, service, imports, web), each a
``SELECT`` on a ``db.reader.Reader``: the store's own driver, or a SQLAlchemy connection inside a
write transaction (``db.reader.in_transaction(session.connection())``). Rows come back as named
tuples, times as aware UTC datetimes; nothing here imports SQLAlchemy or the ORM models.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

from db import reads as q
from db.reader import Reader, utc_datetime
from db.reads import Labels, current_condition
from db.spans import from_epoch

Identity = tuple[str, str, str, int]
Row = TypeVar("Row", bound=tuple[Any, ...])


def _json(value: Any) -> Any:
    """A JSON column's value: SQLite gives its text, psycopg the decoded value."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def _cast(annotation: Any) -> Any:
    """How a column annotated ``annotation`` (a string, or its ``ForwardRef``) is read from either driver."""
    annotation = str(getattr(annotation, "__forward_arg__", annotation))
    if "datetime" in annotation:
        return utc_datetime
    if annotation.startswith("dict"):
        return _json
    if annotation.startswith("bool"):
        return lambda v: None if v is None else bool(v)
    return None


def _select(reader: Reader, cls: type[Row], table: str, tail: str = "",
            params: Mapping[str, Any] | None = None) -> list[Row]:
    """``cls``'s columns (its field names) of ``table``'s rows ``tail`` selects, as ``cls``."""
    casts = [_cast(cls.__annotations__[f]) for f in cls._fields]  # type: ignore[attr-defined]
    sql = f"SELECT {', '.join(cls._fields)} FROM {table} {tail}"  # type: ignore[attr-defined]
    return [cls(*(c(v) if c else v for c, v in zip(casts, r, strict=True)))
            for r in reader.rows(sql, params)]


def stored_time(reader: Reader, at: datetime) -> Any:
    """``at`` as a ``UTCDateTime`` column holds it, to compare with one: naive UTC text in SQLite."""
    at = at.astimezone(UTC)
    return at.replace(tzinfo=None).isoformat(" ", "microseconds") if reader.dialect == "sqlite" else at


def ping(reader: Reader) -> None:
    """Raise the driver's error when the store cannot answer a statement (health checks)."""
    reader.scalar("SELECT 1")


# --- providers and runs ------------------------------------------------------------------------


class ProviderRow(NamedTuple):
    """A ``provider`` row (``db.models.Provider``'s columns)."""

    name: str
    display_name: str
    last_run_at: datetime | None
    last_status: str | None
    last_success_at: datetime | None
    last_attempt_at: datetime | None
    interval_s: int | None
    consecutive_failures: int


def providers(reader: Reader) -> dict[str, ProviderRow]:
    """Every stored provider by name."""
    return {p.name: p for p in _select(reader, ProviderRow, "provider")}


def provider(reader: Reader, name: str) -> ProviderRow | None:
    """One stored provider, or ``None``."""
    found = _select(reader, ProviderRow, "provider", "WHERE name = :n", {"n": name})
    return found[0] if found else None


class RunRow(NamedTuple):
    """A ``scrape_run`` row (``db.models.ScrapeRun``'s columns)."""

    id: int
    provider: str
    started_at: datetime
    finished_at: datetime | None
    status: str
    source: str
    offers_seen: int
    new_offers: int
    prices_changed: int
    returned_offers: int
    quarantined: int
    unmapped: int
    duration_s: float | None
    error_class: str | None
    error_message: str | None


def recent_runs(reader: Reader, *, limit: int = 50, providers: Sequence[str] | None = None,
                statuses: Sequence[str] | None = None) -> list[RunRow]:
    """The newest scrape runs first (optionally of some providers / with some statuses)."""
    where, params = "WHERE 1 = 1", {"limit": limit, "p": list(providers or ()), "s": list(statuses or ())}
    where += " AND provider IN :p" if providers else ""
    where += " AND status IN :s" if statuses else ""
    return _select(reader, RunRow, "scrape_run", where + " ORDER BY id DESC LIMIT :limit", params)


def latest_run_per_provider(reader: Reader) -> dict[str, RunRow]:
    """Each provider's newest scrape run."""
    return {r.provider: r for r in _select(reader, RunRow, "scrape_run",
                                           "WHERE id IN (SELECT MAX(id) FROM scrape_run GROUP BY provider)")}


def first_run_at(reader: Reader) -> dict[str, datetime]:
    """When each provider's first run started."""
    rows = reader.rows("SELECT provider, MIN(started_at) FROM scrape_run GROUP BY provider")
    return {p: utc_datetime(t) for p, t in rows}  # type: ignore[misc]


def running_runs(reader: Reader, started_before: datetime | None = None, *, providers: Sequence[str] | None = None,
                 started_since: datetime | None = None) -> list[RunRow]:
    """Runs still marked ``running`` (of ``providers``; started in the range given)."""
    where, params = "WHERE status = 'running'", {"p": list(providers or ())}
    if providers is not None:
        where += " AND provider IN :p"
    if started_before is not None:
        where, params["b"] = where + " AND started_at < :b", stored_time(reader, started_before)
    if started_since is not None:
        where, params["a"] = where + " AND started_at >= :a", stored_time(reader, started_since)
    return _select(reader, RunRow, "scrape_run", where, params)


def run_started_at(reader: Reader, run_id: int) -> datetime:
    """When run ``run_id`` started."""
    return utc_datetime(reader.scalar("SELECT started_at FROM scrape_run WHERE id = :i", {"i": run_id}))  # type: ignore[return-value]


def collected_ok(reader: Reader, provider: str, *, besides: int | None = None) -> bool:
    """Whether a real (or replayed) scrape of ``provider`` ever succeeded (import runs carry a
    note; ``besides``: a run left out)."""
    return reader.scalar("SELECT id FROM scrape_run WHERE provider = :p AND status = 'ok' AND error_message IS NULL "
                         "AND id <> :b LIMIT 1", {"p": provider, "b": -1 if besides is None else besides}) is not None


def ok_collection_times(reader: Reader, since: datetime, until: datetime,
                        providers: Sequence[str] | None = None) -> list[datetime]:
    """When each successful collection (not an import: its run carries a note) in ``[since, until]`` started."""
    sql = ("SELECT started_at FROM scrape_run WHERE status = 'ok' AND error_message IS NULL "
           "AND started_at >= :a AND started_at <= :b" + (" AND provider IN :p" if providers else ""))
    rows = reader.rows(sql, {"a": stored_time(reader, since), "b": stored_time(reader, until), "p": list(providers or ())})
    return [utc_datetime(t) for (t,) in rows]  # type: ignore[misc]


def failed_runs(reader: Reader, until: datetime) -> list[tuple[str, datetime]]:
    """(provider, started_at) of the failed or skipped runs started by ``until``."""
    rows = reader.rows("SELECT provider, started_at FROM scrape_run WHERE status IN ('failed', 'skipped') "
                       "AND started_at <= :b", {"b": stored_time(reader, until)})
    return [(p, utc_datetime(t)) for p, t in rows]  # type: ignore[misc]


def imported_providers(reader: Reader) -> set[str]:
    """Providers with a run written by an archive import."""
    return {p for (p,) in reader.rows("SELECT DISTINCT provider FROM scrape_run WHERE source = 'import'")}


# --- offers and prices -------------------------------------------------------------------------


def previous_prices(reader: Reader, provider: str, currencies: Mapping[Identity, str] | None = None) -> dict[Identity, float]:
    """Last stored whole-instance price per offer identity (for outlier checks), from the
    current state: one row per offer of ``provider``, however long the history.

    ``currencies``: the currency each offer is now priced in; a stored price in another one
    (a rate configured since, say) is left out, so a conversion is never judged a price jump."""
    rows = reader.rows(
        "SELECT o.sku, o.region, o.kind, o.term_months, i.price_per_hour, c.name FROM price_interval_open i "
        "JOIN label l ON l.id = i.provider_id JOIN label c ON c.id = i.currency_id "
        "JOIN offer o ON o.id = i.offer_id WHERE l.space = 'provider' AND l.name = :p", {"p": provider})
    return {(sku, region, kind, term): price for sku, region, kind, term, price, currency in rows
            if currencies is None or currencies.get((sku, region, kind, term), currency) == currency}


def pending_jumps(reader: Reader, provider: str, marker: str = "held until a second scrape confirms it") -> dict[Identity, float]:
    """Prices held for confirmation (reason ending in ``marker``) in the provider's latest good run.

    One statement: it runs in every collection's write transaction, so the latest good run is
    found by walking the (provider, started_at) index backwards from the newest run, not by
    scanning every run the provider ever had."""
    rows = reader.rows(
        "SELECT sku, region, kind, term_months, price_per_hour, reason FROM quarantine WHERE run_id = "
        "(SELECT id FROM scrape_run WHERE provider = :p AND status IN ('ok', 'partial') ORDER BY started_at DESC, id DESC LIMIT 1) "
        "AND price_per_hour IS NOT NULL", {"p": provider})
    return {(sku, region, kind, term): price for sku, region, kind, term, price, reason in rows
            if (reason or "").endswith(marker)}


def market_medians(reader: Reader, min_offers: int = 3) -> dict[str, float]:
    """Median current USD price per GPU-hour of every GPU with at least ``min_offers`` offers
    (from the current state, not from history: the offers ``latest_prices`` shows, read as
    two columns, since every provider's validation asks for it). Stale providers count: this is
    a plausibility check on what the market last listed, not an answer to "now"."""
    where, params = current_condition(reader, include_stale=True)
    by_gpu: dict[str, list[float]] = {}
    for gpu, price in reader.rows(
            "SELECT o.gpu, i.price_per_gpu_hour FROM price_interval_open i "
            f"JOIN offer o ON o.id = i.offer_id JOIN label c ON c.id = i.currency_id WHERE {where} "
            "AND o.gpu IS NOT NULL AND c.name = 'USD'", params):
        by_gpu.setdefault(gpu, []).append(price)
    return {gpu: statistics.median(ps) for gpu, ps in by_gpu.items() if len(ps) >= min_offers}


def current_offer_counts(reader: Reader) -> dict[str, int]:
    """Per provider: priced offers listed by its latest successful scrape, however old (the
    providers view shows it beside the collection's age)."""
    where, params = current_condition(reader, include_stale=True)
    return {p: int(n) for p, n in reader.rows(
        "SELECT l.name, COUNT(*) FROM price_interval_open i JOIN label l ON l.id = i.provider_id "
        f"WHERE {where} GROUP BY l.name", params)}


def offer_extra_field(reader: Reader, providers: Sequence[str], field: Mapping[str, str],
                      gpus: Sequence[str] | None = None) -> dict[tuple[str, str, str, str, int], Any]:
    """``field[provider]`` of each offer's ``extra``, keyed like a ``latest_prices`` row
    (provider, sku, region, kind, term_months); offers without the field are left out."""
    if not providers:
        return {}
    sql = "SELECT provider, sku, region, kind, term_months, extra FROM offer WHERE provider IN :p"
    if gpus is not None:
        sql += " AND gpu IN :g"
    out: dict[tuple[str, str, str, str, int], Any] = {}
    for provider_, sku, region, kind, term, extra in reader.rows(sql, {"p": list(providers), "g": list(gpus or [""])}):
        value = (_json(extra) or {}).get(field.get(provider_, ""))
        if value is not None:
            out[(provider_, sku, region, kind, term)] = value
    return out


def offer_last_seen(reader: Reader, provider: str) -> dict[Identity, datetime]:
    """When each stored offer of ``provider`` was last seen, by identity."""
    rows = reader.rows("SELECT sku, region, kind, term_months, last_seen FROM offer WHERE provider = :p", {"p": provider})
    return {(s, r, k, t): utc_datetime(seen) for s, r, k, t, seen in rows}  # type: ignore[misc]


def unmapped_gpu_names(reader: Reader) -> list[dict[str, Any]]:
    """Raw GPU names stored without a canonical id, with how many offers carry each."""
    rows = reader.rows("SELECT gpu_raw, COUNT(*), MIN(provider) FROM offer WHERE gpu IS NULL "
                       "GROUP BY gpu_raw ORDER BY COUNT(*) DESC, gpu_raw")
    return [{"gpu_raw": raw, "offers": int(n), "example_provider": p} for raw, n, p in rows]


def offer_mapping_counts(reader: Reader) -> tuple[int, int]:
    """(offers without a canonical GPU, all offers): the unmapped share ``catalog --unmapped`` reports."""
    unmapped, total = reader.rows("SELECT COUNT(CASE WHEN gpu IS NULL THEN 1 END), COUNT(*) FROM offer")[0]
    return int(unmapped), int(total)


def first_price_at(reader: Reader, gpus: Sequence[str] | None = None) -> datetime | None:
    """When the oldest stored price (of ``gpus``, when given) was first seen (roll-ups count:
    raw intervals past the retention time are gone, their buckets are not)."""
    known = Labels(reader)
    ids = known.lookup("gpu", gpus) if gpus is not None else sorted(known.names("gpu"))
    if not ids:
        return None
    raw = reader.scalar("SELECT MIN(first_seen) FROM price_interval WHERE gpu_id IN :g", {"g": ids})
    rolled = reader.scalar("SELECT MIN(bucket) FROM rollup_day WHERE gpu_id IN :g", {"g": ids})
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


def interval_rows(reader: Reader, *, provider: str | None = None, offer_id: int | None = None) -> list[IntervalRow]:
    """Stored intervals in id order (of one provider or offer when given)."""
    known = Labels(reader)
    names = {i: n for space in known.by_space.values() for i, n in space.items()}
    sql = ("SELECT i.id, i.offer_id, i.provider_id, i.gpu_id, i.kind_id, i.currency_id, i.price_per_hour, "
           "i.price_per_gpu_hour, i.available, i.first_seen, i.last_seen, i.ends_at, i.observations "
           "FROM price_interval i WHERE 1 = 1")
    params: dict[str, Any] = {}
    if provider is not None:
        sql += " AND i.provider_id = :p"
        params["p"] = (known.lookup("provider", [provider]) or [-1])[0]
    if offer_id is not None:
        sql += " AND i.offer_id = :o"
        params["o"] = offer_id
    return [IntervalRow(r[0], r[1], names[r[2]], names.get(r[3]) if r[3] is not None else None, names[r[4]], names[r[5]],
                        r[6], r[7], None if r[8] is None else bool(r[8]), from_epoch(r[9]), from_epoch(r[10]),
                        from_epoch(r[11]) if r[11] is not None else None, r[12])
            for r in reader.rows(sql + " ORDER BY i.id", params)]


# --- alerts -----------------------------------------------------------------------------------


def rule_intervals(reader: Reader, columns: str, *, gpus: Sequence[str], kinds: Sequence[str],
                   providers: Sequence[str] = (), regions: Sequence[str] = (), min_gpu_count: float | None = None,
                   until: int | None = None, since: int | None = None) -> list[tuple[Any, ...]]:
    """``columns`` (SQL over ``price_interval i``, ``offer o``, labels ``lp`` provider, ``lg`` gpu,
    ``lk`` kind) of the stored USD intervals of an alert rule's GPUs, kinds, providers, regions
    and least GPU count, first seen by ``until`` and last seen from ``since`` (epoch seconds) on."""
    known = Labels(reader)
    sql = (f"SELECT {columns} "
           "FROM price_interval i JOIN offer o ON o.id = i.offer_id JOIN label lp ON lp.id = i.provider_id "
           "JOIN label lg ON lg.id = i.gpu_id JOIN label lk ON lk.id = i.kind_id "
           "WHERE i.gpu_id IN :gpus AND i.kind_id IN :kinds AND i.currency_id = :usd")
    params: dict[str, Any] = {"gpus": known.lookup("gpu", gpus) or [-1], "kinds": known.lookup("kind", kinds) or [-1],
                              "usd": (known.lookup("currency", ["USD"]) or [-1])[0],
                              "providers": known.lookup("provider", providers) or [-1], "regions": list(regions),
                              "min_count": min_gpu_count, "until": until, "since": since}
    sql += " AND i.provider_id IN :providers" if providers else ""
    sql += " AND o.region IN :regions" if regions else ""
    sql += " AND o.gpu_count >= :min_count" if min_gpu_count is not None else ""
    sql += " AND i.first_seen <= :until" if until is not None else ""
    sql += " AND i.last_seen >= :since" if since is not None else ""
    return reader.rows(sql, params)


class AlertStateRow(NamedTuple):
    """An ``alert_state`` row (``db.models.AlertState``'s columns)."""

    fingerprint: str
    state: str
    pending_count: int
    last_value: float | None
    data_stamp: str
    last_evaluated_at: datetime | None
    last_fired_at: datetime | None
    last_resolved_at: datetime | None
    all_time_low: float | None
    alerted_low: float | None
    last_available: bool | None
    version: int


def alert_state(reader: Reader, rule: str) -> AlertStateRow | None:
    """Rule ``rule``'s stored state, or ``None``."""
    found = _select(reader, AlertStateRow, "alert_state", "WHERE rule = :r", {"r": rule})
    return found[0] if found else None


class EventRow(NamedTuple):
    """An ``alert_event`` row (``db.models.AlertEvent``'s columns)."""

    id: int
    rule: str
    kind: str
    created_at: datetime
    gpu: str
    value: float | None
    threshold: float | None
    previous_value: float | None
    provider: str | None
    region: str | None
    offer_kind: str | None
    title: str
    message: str
    details: dict[str, Any]


class OutboxRow(NamedTuple):
    """An ``outbox`` row (``db.models.Outbox``'s columns)."""

    id: int
    event_id: int
    rule: str
    channel_index: int
    channel: str
    status: str
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    claimed_until: datetime | None
    last_error: str | None
    delivered_at: datetime | None


def alert_events(reader: Reader, *, rule: str | None = None, limit: int = 50) -> list[EventRow]:
    """Recent events, newest first (of ``rule`` when given)."""
    return _select(reader, EventRow, "alert_event", ("WHERE rule = :r " if rule else "")
                   + "ORDER BY created_at DESC, id DESC LIMIT :limit", {"r": rule, "limit": limit})


def event(reader: Reader, event_id: int) -> EventRow | None:
    """Event ``event_id``, or ``None``."""
    found = _select(reader, EventRow, "alert_event", "WHERE id = :i", {"i": event_id})
    return found[0] if found else None


def outbox_rows(reader: Reader, *, event_ids: Sequence[int] | None = None, row_id: int | None = None,
                statuses: Sequence[str] | None = None, rule: str | None = None,
                limit: int | None = None) -> list[OutboxRow]:
    """Outbox rows: of some events (oldest first), one row, or the newest first (of some
    statuses / one rule)."""
    params: dict[str, Any] = {"e": list(event_ids or ()), "i": row_id, "s": list(statuses or ()), "r": rule, "limit": limit}
    where = "WHERE 1 = 1" + (" AND event_id IN :e" if event_ids is not None else "") + (
        " AND id = :i" if row_id is not None else "") + (" AND status IN :s" if statuses else "") + (
        " AND rule = :r" if rule else "")
    if event_ids is not None and not event_ids:
        return []
    order = " ORDER BY id" if limit is None else " ORDER BY created_at DESC, id DESC LIMIT :limit"
    return _select(reader, OutboxRow, "outbox", where + order, params)


def events_by_id(reader: Reader, ids: Sequence[int]) -> dict[int, EventRow]:
    """The events ``ids`` by id."""
    return {e.id: e for e in _select(reader, EventRow, "alert_event", "WHERE id IN :i", {"i": list(ids)})} if ids else {}


def delivery_counts(reader: Reader) -> dict[str, int]:
    """How many outbox rows are in each status (present ones only)."""
    return {s: int(n) for s, n in reader.rows("SELECT status, COUNT(*) FROM outbox GROUP BY status")}


def due_outbox_ids(reader: Reader, now: datetime, limit: int) -> list[int]:
    """Pending outbox rows due at ``now`` and not claimed by a sender, oldest first."""
    t = stored_time(reader, now)
    return [i for (i,) in reader.rows(
        "SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= :t "
        "AND (claimed_until IS NULL OR claimed_until < :t) ORDER BY id LIMIT :limit", {"t": t, "limit": limit})]


def pending_outbox_ids(reader: Reader, event_id: int) -> list[int]:
    """The pending outbox rows of one event, oldest first."""
    return [i for (i,) in reader.rows("SELECT id FROM outbox WHERE event_id = :e AND status = 'pending' ORDER BY id",
                                      {"e": event_id})]


class DigestStateRow(NamedTuple):
    """A ``digest_state`` row (``db.models.DigestState``'s columns)."""

    name: str
    created_at: datetime
    last_sent_at: datetime | None
    last_values: dict[str, Any]
    version: int


def digest_states(reader: Reader, names: Sequence[str]) -> list[DigestStateRow]:
    """The stored states of the digests ``names``."""
    return _select(reader, DigestStateRow, "digest_state", "WHERE name IN :n", {"n": list(names)}) if names else []


# --- imports ----------------------------------------------------------------------------------


def offers_of_skus(reader: Reader, provider: str, skus: Sequence[str]) -> list[tuple[Identity, dict[str, Any], datetime]]:
    """(identity, ``extra``, last seen) of the stored offers of ``provider`` with these SKUs, read
    in bounded statements (SQLite's parameter limit)."""
    names, out = sorted(skus), []
    for k in range(0, len(names), 5000):
        for sku, region, kind, term, extra, seen in reader.rows(
                "SELECT sku, region, kind, term_months, extra, last_seen FROM offer WHERE provider = :p AND sku IN :s",
                {"p": provider, "s": names[k:k + 5000]}):
            out.append(((sku, region, kind, term), _json(extra), utc_datetime(seen)))
    return out  # type: ignore[return-value]


def snapshot_times(reader: Reader, offer_ids: Sequence[int], lo: int, hi: int) -> list[int]:
    """Snapshot times in ``[lo, hi]`` (epoch seconds, oldest first, once each) of the imported
    series the offers ``offer_ids`` belong to."""
    from db.series import (
        series_of,  # the rule of what names a series; SQLAlchemy is loaded by then
    )

    ids = sorted(set(offer_ids))
    names = sorted({s for _i, _p, extra in (reader.rows(q.OFFER_EXTRAS, {"ids": ids}) if ids else [])
                    if (s := series_of(extra)) is not None})
    return [int(t) for (t,) in reader.rows("SELECT DISTINCT at FROM snapshot_time WHERE series IN :s "
                                           "AND at >= :lo AND at <= :hi ORDER BY at",
                                           {"s": names, "lo": lo, "hi": hi})] if names else []


# --- the scheduler ----------------------------------------------------------------------------


def has_table(reader: Reader, name: str) -> bool:
    """Whether table ``name`` exists (on PostgreSQL: on the search path)."""
    if reader.dialect == "sqlite":
        return reader.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :t", {"t": name}) is not None
    return reader.scalar("SELECT to_regclass(CAST(:t AS text)) IS NOT NULL", {"t": name}) is True


def scheduler_jobs(reader: Reader, table: str, prefix: str) -> list[tuple[str, float | None, bytes]]:
    """(id, next run as epoch seconds, pickled state) of the jobs of the job store ``table`` whose
    id starts with ``prefix`` (none when no scheduler ever made the table)."""
    if not has_table(reader, table):
        return []
    return [(i, t, bytes(s)) for i, t, s in reader.rows(f"SELECT id, next_run_time, job_state FROM {table} "
                                                        "WHERE id LIKE :p", {"p": prefix + "%"})]


class LeaseRow(NamedTuple):
    """The scheduler lease's row (``tracker.service.leader.lease_table``)."""

    epoch: int
    owner: str
    pid: int
    host: str
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime
    released_at: datetime | None


class LeaderRow(NamedTuple):
    """The last recorded scheduler's row (``tracker.service.leader.leader_table``)."""

    pid: int
    host: str
    since: datetime
    heartbeat_at: datetime
    heartbeat_every_s: float
    stopped_at: datetime | None
    lock: str


def lease(reader: Reader, table: str) -> LeaseRow | None:
    """The scheduler lease of ``table``, or ``None`` before the first scheduler took it."""
    found = _select(reader, LeaseRow, table, "WHERE id = 1")
    return found[0] if found else None


def leader(reader: Reader, table: str) -> LeaderRow | None:
    """The last recorded scheduler of ``table``, or ``None`` when none ever ran (or no table)."""
    found = _select(reader, LeaderRow, table, "WHERE id = 1") if has_table(reader, table) else []
    return found[0] if found else None


# --- collection -------------------------------------------------------------------------------


def collected(reader: Reader, source: str) -> bool:
    """Whether a collection from ``source`` (``live`` or ``replay``) ever stored prices."""
    return reader.scalar("SELECT id FROM scrape_run WHERE source = :s AND status IN ('ok', 'partial') LIMIT 1",
                         {"s": source}) is not None


def recent_sizes(reader: Reader, provider: str, small: str, limit: int) -> list[int]:
    """Offers seen by the provider's ``limit`` latest live collections that were complete (an
    archive import's run carries a note in ``error_message`` and is not one) or partial by
    ``error_class`` ``small``, walking the (provider, started_at) index backwards."""
    return [int(n) for (n,) in reader.rows(
        "SELECT offers_seen FROM scrape_run WHERE provider = :p AND ((status = 'ok' AND error_message IS NULL) "
        "OR (status = 'partial' AND error_class = :small)) ORDER BY started_at DESC, id DESC LIMIT :n",
        {"p": provider, "small": small, "n": limit})]


def unseen_offers(reader: Reader, provider_id: int, since: int, t: int) -> int:
    """How many offers of the provider's current list, seen from ``since`` on, were not seen at ``t``."""
    return int(reader.scalar("SELECT COUNT(*) FROM price_interval_open WHERE provider_id = :p "
                             "AND last_seen >= :since AND last_seen < :t", {"p": provider_id, "since": since, "t": t}))


class FailureRow(NamedTuple):
    """A kept ``parse_failure`` (``tracker.pipeline.failures``)."""

    provider: str
    run_id: int | None
    captured_at: datetime
    error: str
    encoding: str
    payload: str
    size: int
    truncated: bool


def latest_failure(reader: Reader, provider: str) -> FailureRow | None:
    """The newest kept parse failure of ``provider``, or ``None``."""
    found = _select(reader, FailureRow, "parse_failure", "WHERE provider = :p ORDER BY captured_at DESC, id DESC LIMIT 1",
                    {"p": provider})
    return found[0] if found else None


def failures_kept(reader: Reader, provider: str) -> int:
    """How many parse failures of ``provider`` are kept."""
    return int(reader.scalar("SELECT COUNT(*) FROM parse_failure WHERE provider = :p", {"p": provider}))
