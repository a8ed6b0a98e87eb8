"""Storing archive snapshots so that the history means what a live collection would mean.

Every snapshot goes through the pipeline's own stages (``normalise``, ``validate``,
``store_observation``), one series at a time in time order, inside one transaction. The rules:

* **Cadence.** A series' snapshots are its collection attempts. Consecutive snapshots more
  than ``max_gap`` apart (the archive's cadence allows no more; each format states a
  default, ``--max-gap`` overrides it) have a gap between them: an interval never spans it,
  and the first snapshot after it starts new intervals even at the same price (counted as
  *returned*, not as a changed price).
* **Absence.** An offer of the series missing from a snapshot is no longer listed: its
  interval ends at that snapshot.
* **Idempotency.** All the files of one import are merged before anything is stored, and
  duplicate snapshots (same series, same time) are one; so one file or many, in any order,
  give the same history. Snapshots not newer than what the store already holds for the
  series are skipped (``already_stored``), so a second import changes nothing.
* **Providers.** An archive's provider names go through ``aliases.provider_name``. A
  provider with a scraper keeps what its live scrapes say is current; a provider known from
  imports alone (never scraped) takes the newest snapshot as its current list, and one with
  no scraper at all is an *external* provider whose collection interval is the archive's
  ``cadence``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db import labels, queries, rollups, series as series_times_db
from db.engine import session_scope
from db.models import Offer, Provider, ScrapeRun
from db.types import epoch, from_epoch, utcnow
from scrapers.base import ScrapedOffer
from tracker.analysis.imports.aliases import is_external
from tracker.analysis.imports.base import ImportResult, Progress, Snapshot
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer, normalise
from tracker.pipeline.validate import HELD, validate

Identity = tuple[str, str, str, int]
SERIES_KEY = series_times_db.SERIES_KEY


def merge(snapshots: Iterable[Snapshot]) -> tuple[dict[str, list[datetime]], dict[tuple[str, str], dict[datetime, list[ScrapedOffer]]]]:
    """Each series' snapshot times (oldest first), and per (provider, series) the offers seen
    at each time, duplicates merged (the same offer at the same time is one observation).

    A snapshot with an empty ``provider`` only says that the series was collected then."""
    times: dict[str, set[datetime]] = defaultdict(set)
    seen: dict[tuple[str, str], dict[datetime, dict[tuple[str, str, str, int], ScrapedOffer]]] = defaultdict(dict)
    for s in snapshots:
        t = s.at.replace(microsecond=0)  # the store keeps whole seconds
        times[s.series].add(t)
        if s.provider:
            at = seen[(s.provider, s.series)].setdefault(t, {})
            for o in s.offers:
                at[(o.sku, o.region, o.kind, o.term_months)] = o
    return ({k: sorted(v) for k, v in times.items()},
            {k: {t: list(v.values()) for t, v in by.items()} for k, by in sorted(seen.items())})


def _series_state(session: Session, provider: str, series: str) -> tuple[set[Identity], datetime | None]:
    """The series' stored offer identities and the time of its newest stored snapshot."""
    offers = session.exec(select(Offer).where(Offer.provider == provider)).all()
    mine = {o.id: (o.sku, o.region, o.kind, o.term_months) for o in offers if (o.extra or {}).get(SERIES_KEY) == series}
    if not mine:
        return set(), None
    row = session.connection().execute(
        text("SELECT MAX(last_seen), MAX(ends_at) FROM price_interval WHERE offer_id IN :ids")
        .bindparams(bindparam("ids", expanding=True)), {"ids": list(mine)}
    ).one()
    times = [int(t) for t in row if t is not None]
    return set(mine.values()), from_epoch(max(times)) if times else None


def _scraped_live(session: Session, provider: str) -> bool:
    """Whether a real (or replayed) scrape of ``provider`` ever succeeded; import runs carry a note."""
    row = session.exec(
        select(ScrapeRun.id).where(
            ScrapeRun.provider == provider, ScrapeRun.status == "ok", col(ScrapeRun.error_message).is_(None),
        ).limit(1)
    ).first()
    return row is not None


def _refresh_rollups(session: Session, touched: Mapping[str, list[int]]) -> None:
    """The roll-ups of what the import stored, once per provider (not once per snapshot)."""
    conn = session.connection()
    session.flush()
    intervals = rollups.provider_intervals(conn)
    ids = labels.lookup(conn, "provider", sorted(touched))
    for pid, (lo, hi) in zip(ids, (touched[p] for p in sorted(touched)), strict=True):
        pad = intervals.get(pid, rollups.DEFAULT_INTERVAL_S)
        start = lo - pad
        while start <= hi + pad:
            rollups.refresh(conn, pid, start, min(start + rollups.REBUILD_WINDOW - 1, hi + pad), intervals)
            start += rollups.REBUILD_WINDOW


def _tagged(o: NormalisedOffer, series: str) -> NormalisedOffer:
    return replace(o, extra={**dict(o.extra), SERIES_KEY: series})


def store_snapshots(
    engine: Engine,
    snapshots: Iterable[Snapshot],
    result: ImportResult,
    *,
    max_gap: timedelta | None,
    cadence: timedelta | None = None,
    note: str,
    currency_rates: Mapping[str, float] | None = None,
    progress: Progress | None = None,
) -> ImportResult:
    """Store ``snapshots`` (see the module docstring) in one transaction; fill ``result``."""
    series_times, series_map = merge(snapshots)
    total = sum(len(series_times[series]) for _p, series in series_map)
    done = 0
    result.max_gap = max_gap
    with session_scope(engine) as session:
        runs: dict[str, ScrapeRun] = {}
        latest: dict[str, datetime] = {}
        touched: dict[str, list[int]] = {}  # provider -> [first, last] epoch second stored
        collected: dict[str, set[int]] = defaultdict(set)  # series -> snapshot times stored
        for (provider, series), by_time in series_map.items():
            prov = queries.ensure_provider(session, provider)
            if provider not in runs:
                runs[provider] = ScrapeRun(provider=provider, started_at=utcnow(), replay=False, status="running")
                session.add(runs[provider])
                session.flush()
            run = runs[provider]
            external = is_external(provider)
            scope, previous = _series_state(session, provider, series)
            pending: dict[Identity, float] = {}
            listed = bool(scope)  # whether an interval of the series may still be open
            for at in series_times[series]:
                done += 1
                if progress is not None and (done % 25 == 0 or done == total):
                    progress(done, total)
                normalised = [_tagged(normalise(o, currency_rates), series) for o in by_time.get(at, [])]
                result.observations += len(normalised)
                if previous is not None and at <= previous:
                    result.already_stored += len(normalised)
                    continue
                latest[provider] = max(latest.get(provider, at), at)  # a collection of the series
                collected[series].add(epoch(at))
                if not normalised and not listed:
                    previous = at
                    continue  # nothing open to close: an attempt that changes nothing stored
                result.snapshots += 1
                scope |= {o.identity for o in normalised}
                accepted, rejected = validate(normalised, queries.previous_prices(session, provider), pending)
                stats = store_stage.store_observation(
                    session, provider, accepted, at, previous, max_gap=max_gap, complete=False, scope=scope,
                    interval_s=cadence.total_seconds() if external and cadence else None, refresh_rollups=False,
                )
                span = touched.setdefault(provider, [epoch(previous or at), epoch(at)])
                span[0], span[1] = min(span[0], epoch(previous or at)), max(span[1], epoch(at))
                quarantined = store_stage.store_quarantine(session, run.id, rejected, at)
                pending = {r.offer.identity: r.offer.price_per_hour for r in rejected
                           if r.reason.endswith(HELD) and r.offer.price_per_hour is not None}
                result.stored += len(accepted)
                result.new_offers += stats.new_offers
                result.prices_changed += stats.prices_changed
                result.returned += stats.returned
                result.quarantined += quarantined
                for o in accepted:
                    if o.gpu is None:
                        result.unmapped[o.gpu_raw] += 1
                run.offers_seen += len(normalised)
                run.new_offers += stats.new_offers
                run.prices_changed += stats.prices_changed
                run.returned_offers += stats.returned
                run.quarantined += quarantined
                run.unmapped += sum(1 for o in accepted if o.gpu is None)
                previous = at
                listed = bool(accepted)
            if external and provider not in result.external_providers:
                result.external_providers.append(provider)
                if not prov.display_name or prov.display_name == provider:
                    prov.display_name = provider
        for provider, at in latest.items():
            prov = queries.ensure_provider(session, provider)
            if (prov.last_success_at is None or at > prov.last_success_at) and not _scraped_live(session, provider):
                # Only a provider known from imports alone takes the archive as its current list.
                prov.last_success_at = at
                prov.last_status = "ok"
                if prov.last_attempt_at is None or at > prov.last_attempt_at:
                    prov.last_attempt_at = at
        for name, stored in collected.items():
            series_times_db.add(session.connection(), name, stored)
        _refresh_rollups(session, touched)
        finished = utcnow()
        for run in runs.values():
            run.status, run.finished_at = "ok", finished
            run.duration_s = (finished - run.started_at).total_seconds()
            run.error_message = note
        result.providers = sorted(runs)
    return result



IMPORT_NOTE = "import of "


def external_providers(session: Session) -> dict[str, Provider]:
    """Providers known from imported history only: stored, imported, and without a scraper."""
    imported = set(session.exec(
        select(ScrapeRun.provider).where(col(ScrapeRun.error_message).startswith(IMPORT_NOTE)).distinct()
    ).all())
    return {p.name: p for p in session.exec(select(Provider)).all() if p.name in imported and is_external(p.name)}
