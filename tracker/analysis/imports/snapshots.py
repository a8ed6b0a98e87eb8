"""Storing archive snapshots so that the history means what a live collection would mean.

Every snapshot goes through the pipeline's own stages (``normalise``, ``validate``), and the
intervals are cut by one rule (``runs.cut``) inside one transaction. The rules:

* **Cadence.** A series' snapshots are its collection attempts. Consecutive snapshots more
  than ``max_gap`` apart (the archive's cadence allows no more; each format states a
  default, ``--max-gap`` overrides it) have a gap between them: an interval never spans it,
  and the first snapshot after it starts new intervals even at the same price (counted as
  *returned*, not as a changed price).
* **Absence.** An offer of the series missing from a snapshot is no longer listed: its
  interval ends at that snapshot.
* **Order and repetition.** The stored history is a function of the set of snapshots alone:
  one file or many, in one command or in several, oldest or newest first, twice or once. Each
  series' snapshot times are kept (``db.series``), so the stored observations are known
  exactly (an interval was seen at every snapshot of its series from ``first_seen`` to
  ``last_seen``). An import re-cuts, per provider of the series, only the range its new
  snapshots can change -- from the stored snapshot before the oldest new one to the stored
  snapshot after the newest, widened to whole intervals -- from the stored observations there
  plus the new ones, replaces the intervals that differ, and refreshes that range's roll-ups.
  Snapshots already stored are skipped (``already_stored``), so a second import changes
  nothing. The gap rule is the importing command's ``max_gap``: import one archive with one
  value. Each new snapshot is validated against the offer's price at its latest observation
  before it (a jump is held until the next snapshot confirms it); stored observations are not
  judged again.
* **Providers.** An archive's provider names go through ``aliases.provider_name``. A
  provider with a scraper keeps what its live scrapes say is current; a provider known from
  imports alone (never scraped) takes the newest snapshot as its current list, and one with
  no scraper at all is an *external* provider whose collection interval is the archive's
  ``cadence``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, cast
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db import labels, queries, rollups
from db import series as series_db
from db.engine import session_scope
from db.models import Offer, Provider, Quarantine, ScrapeRun
from db.types import epoch, from_epoch, utcnow
from scrapers.base import ScrapedOffer
from tracker.analysis.imports.aliases import is_external
from tracker.analysis.imports.base import ImportResult, Progress, Snapshot
from tracker.analysis.imports.runs import Seen, cut
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer, normalise
from tracker.pipeline.validate import HELD, validate

Identity = tuple[str, str, str, int]
SERIES_KEY = series_db.SERIES_KEY
#: Offer columns kept from an offer's newest observation (besides its identity).
OFFER_FIELDS = ("gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "vcpus", "ram_gb", "country")


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


def _series_offers(session: Session, provider: str, series: str) -> dict[Identity, Offer]:
    """The stored offers of ``provider`` that belong to ``series``."""
    offers = session.exec(select(Offer).where(Offer.provider == provider)).all()
    return {(o.sku, o.region, o.kind, o.term_months): o for o in offers if series_db.series_of(o.extra) == series}


def _series_providers(session: Session, series: str) -> set[str]:
    """Providers with stored offers of ``series`` (an import that does not list one still speaks for it)."""
    like = f'%"{series_db.SERIES_KEY}"%{series}%'
    rows = session.exec(select(Offer.provider, Offer.extra).where(cast(Offer.extra, String).like(like))).all()
    return {p for p, extra in rows if series_db.series_of(extra) == series}


def _scraped_live(session: Session, provider: str) -> bool:
    """Whether a real (or replayed) scrape of ``provider`` ever succeeded; import runs carry a note."""
    row = session.exec(
        select(ScrapeRun.id).where(
            ScrapeRun.provider == provider, ScrapeRun.status == "ok", col(ScrapeRun.error_message).is_(None),
        ).limit(1)
    ).first()
    return row is not None


def _refresh_rollups(session: Session, touched: Mapping[str, list[int]]) -> None:
    """The roll-ups of what the import changed, once per provider (not once per snapshot)."""
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


def _held(session: Session, provider: str, lo: int, hi: int) -> dict[int, dict[Identity, float]]:
    """Prices of ``provider`` held for confirmation at each stored snapshot time in ``[lo, hi]``."""
    rows = session.exec(select(Quarantine).where(
        Quarantine.provider == provider, col(Quarantine.reason).endswith(HELD),
        col(Quarantine.observed_at) >= from_epoch(lo), col(Quarantine.observed_at) <= from_epoch(hi))).all()
    out: dict[int, dict[Identity, float]] = defaultdict(dict)
    for q in rows:
        if q.price_per_hour is not None:
            out[epoch(q.observed_at)][(q.sku, q.region, q.kind, q.term_months)] = q.price_per_hour
    return out


@dataclass
class _Series:
    """One series of one import: every snapshot time (stored and new), which are new, and the gap rule."""

    name: str
    times: list[int]  # stored and new, oldest first
    new: set[int]
    max_gap_s: float | None

    def bounds(self) -> tuple[int, int]:
        """The range whose intervals the new snapshots can change: from the stored snapshot
        before the oldest new one to the stored snapshot after the newest."""
        i, j = bisect_left(self.times, min(self.new)), bisect_left(self.times, max(self.new))
        return self.times[max(i - 1, 0)], self.times[min(j + 1, len(self.times) - 1)]

    def next_after(self, t: int) -> int | None:
        k = bisect_right(self.times, t)
        return self.times[k] if k < len(self.times) else None


def _store_provider(session: Session, provider: str, sr: _Series, by_time: Mapping[int, list[ScrapedOffer]],
                    run: ScrapeRun, result: ImportResult, currency_rates: Mapping[str, float] | None) -> tuple[int, int] | None:
    """Re-cut ``provider``'s intervals of one series over the range the new snapshots affect,
    from the stored observations there plus the new ones (see the module docstring). Returns the
    range of snapshot times changed, or ``None`` when nothing was."""
    conn = session.connection()
    offers = _series_offers(session, provider, sr.name)
    by_id = {o.id: ident for ident, o in offers.items()}
    lo, hi = sr.bounds()
    affected = series_db.intervals_between(conn, by_id, lo, hi)
    if not affected and not any(by_time.get(t) for t in sr.new):
        return None
    lo = min([lo, *(r["first_seen"] for r in affected)])
    hi = max([hi, *(r["last_seen"] for r in affected)])
    times = [t for t in sr.times if lo <= t <= hi]
    stored_times = [t for t in times if t not in sr.new]
    seen: dict[int, dict[int, Seen]] = defaultdict(dict)
    for r in affected:
        s = Seen(r["gpu_id"], r["kind_id"], r["currency_id"], r["price_per_hour"], r["price_per_gpu_hour"], r["available"])
        for t in stored_times[bisect_left(stored_times, r["first_seen"]):bisect_right(stored_times, r["last_seen"])]:
            seen[r["offer_id"]][t] = s
    # validation in time order, as the collections would have gone: against each offer's price
    # at its latest observation before, and the prices held at the snapshot before
    held = _held(session, provider, lo, hi)
    previous = {by_id[o]: p for o, p in series_db.prices_before(conn, by_id, lo).items()}
    starts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in series_db.intervals_between(conn, by_id, lo, hi):
        if r["first_seen"] < lo:
            previous[by_id[r["offer_id"]]] = r["price_per_hour"]
        else:
            starts[r["first_seen"]].append(r)
    pending: dict[Identity, float] = {}
    accepted_at: dict[int, list[NormalisedOffer]] = {}
    for t in times:
        if t not in sr.new:
            previous.update({by_id[r["offer_id"]]: r["price_per_hour"] for r in starts.get(t, [])})
            pending = held.get(t, {})
            continue
        normalised = [_tagged(normalise(o, currency_rates), sr.name) for o in by_time.get(t, [])]
        accepted, rejected = validate(normalised, previous, pending)
        accepted_at[t] = accepted
        quarantined = store_stage.store_quarantine(session, run.id, rejected, from_epoch(t))
        pending = {r.offer.identity: r.offer.price_per_hour for r in rejected
                   if r.reason.endswith(HELD) and r.offer.price_per_hour is not None}
        previous.update({o.identity: o.price_per_hour for o in accepted if o.price_per_hour is not None})
        result.observations += len(normalised)
        result.stored += len(accepted)
        result.quarantined += quarantined
        result.snapshots += 1
        run.offers_seen += len(normalised)
        run.quarantined += quarantined
        for o in accepted:
            if o.gpu is None:
                result.unmapped[o.gpu_raw] += 1
                run.unmapped += 1

    fresh = _upsert_offers(session, provider, offers, accepted_at)
    earlier = {o.id for o in offers.values() if o.id not in fresh and epoch(o.first_seen) < lo}
    ids = labels.ensure(conn, [("provider", provider)]
                        + [(sp, v) for acc in accepted_at.values() for o in acc
                           for sp, v in (("kind", o.kind), ("currency", o.currency))]
                        + [("gpu", o.gpu) for acc in accepted_at.values() for o in acc if o.gpu is not None])
    pid = ids[("provider", provider)]
    for t, acc in accepted_at.items():
        for o in acc:
            if o.price_per_hour is None or o.price_per_gpu_hour is None:
                continue  # listed without a price: an offer, no interval
            seen[offers[o.identity].id][t] = Seen(  # type: ignore[index]
                ids[("gpu", o.gpu)] if o.gpu is not None else None, ids[("kind", o.kind)], ids[("currency", o.currency)],
                o.price_per_hour, o.price_per_gpu_hour, o.available)

    ends = {(r["offer_id"], r["last_seen"]): r["ends_at"] for r in affected}
    rows = []
    for r in cut(times, seen, sr.max_gap_s, earlier):
        nxt = sr.next_after(r.last)
        rows.append({"offer_id": r.offer_id, "provider_id": pid, "gpu_id": r.seen.gpu_id, "kind_id": r.seen.kind_id,
                     "currency_id": r.seen.currency_id, "price_per_hour": r.seen.price_per_hour,
                     "price_per_gpu_hour": r.seen.price_per_gpu_hour, "available": r.seen.available,
                     "first_seen": r.first, "last_seen": r.last,
                     "ends_at": nxt if nxt is not None else ends.get((r.offer_id, r.last)),
                     "observations": r.observations, "_start": r.start})
    key = series_db.INTERVAL_COLUMNS
    before = {tuple(r[c] for c in key): r["id"] for r in affected}
    after = {tuple(r[c] for c in key): r for r in rows}
    drop = [i for k, i in before.items() if k not in after]
    insert = [r for k, r in after.items() if k not in before]
    for r in insert:
        start = r.pop("_start")
        result.prices_changed += start == "changed"
        result.returned += start == "returned"
        run.prices_changed += start == "changed"
        run.returned_offers += start == "returned"
    result.new_offers += len(fresh)
    run.new_offers += len(fresh)
    touched = {r["offer_id"] for r in affected if r["id"] in set(drop)} | {r["offer_id"] for r in insert}
    series_db.replace_intervals(conn, pid, drop, insert, touched, lo, hi)
    return lo, sr.next_after(hi) or hi


def _upsert_offers(session: Session, provider: str, offers: dict[Identity, Offer],
                   accepted_at: Mapping[int, list[NormalisedOffer]]) -> set[int]:
    """Create the offers first seen now and keep each offer's attributes from its newest
    observation and its first and last sighting; ``offers`` gains the new ones. Returns their ids."""
    newest: dict[Identity, tuple[int, NormalisedOffer]] = {}
    span: dict[Identity, list[int]] = {}
    for t in sorted(accepted_at):
        for o in accepted_at[t]:
            newest[o.identity] = (t, o)
            span.setdefault(o.identity, [t, t])[1] = t
    created = []
    for ident, (t, o) in newest.items():
        first, last = (from_epoch(x) for x in span[ident])
        attrs = {f: getattr(o, f) for f in OFFER_FIELDS}
        have = offers.get(ident)
        if have is None:
            have = Offer(provider=provider, sku=o.sku, region=o.region, kind=o.kind, term_months=o.term_months,
                         extra=dict(o.extra), first_seen=first, last_seen=last, **attrs)
            session.add(have)
            offers[ident] = have
            created.append(have)
            continue
        if last >= have.last_seen:
            for f, v in attrs.items():
                setattr(have, f, v)
            have.extra = dict(o.extra)
            have.last_seen = last
        have.first_seen = min(have.first_seen, first)
    session.flush()
    return {o.id for o in created if o.id is not None}


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
    by_series: dict[str, dict[str, dict[datetime, list[ScrapedOffer]]]] = defaultdict(dict)
    for (provider, name), by_time in series_map.items():
        by_series[name][provider] = by_time
    total, done = len(series_times), 0
    result.max_gap = max_gap
    gap_s = max_gap.total_seconds() if max_gap is not None else None
    with session_scope(engine) as session:
        conn = session.connection()
        runs: dict[str, ScrapeRun] = {}
        latest: dict[str, datetime] = {}
        touched: dict[str, list[int]] = {}  # provider -> [first, last] epoch second changed
        for name in sorted(series_times):
            done += 1
            if progress is not None:
                progress(done, total)
            stored = set(series_db.times(conn, name))
            wanted = {epoch(t) for t in series_times[name]}
            sr = _Series(name, sorted(stored | wanted), wanted - stored, gap_s)
            for provider, by_time in by_series[name].items():
                repeated = sum(len(v) for t, v in by_time.items() if epoch(t) in stored)
                result.observations += repeated
                result.already_stored += repeated
            if not sr.new:
                continue
            listing = by_series[name]
            for provider in sorted(set(listing) | _series_providers(session, name)):
                prov = queries.ensure_provider(session, provider)
                if provider in listing and provider not in runs:
                    runs[provider] = ScrapeRun(provider=provider, started_at=utcnow(), replay=False, status="running")
                    session.add(runs[provider])
                    session.flush()
                # a provider of the series that this import does not list: its intervals may still
                # be re-cut (a new snapshot without it ends them), with nothing to count
                run = runs.get(provider) or ScrapeRun(provider=provider)
                by_time = {epoch(t): v for t, v in listing.get(provider, {}).items()}
                changed = _store_provider(session, provider, sr, by_time, run, result, currency_rates)
                if changed is not None:
                    span = touched.setdefault(provider, list(changed))
                    span[0], span[1] = min(span[0], changed[0]), max(span[1], changed[1])
                if provider not in listing:
                    continue
                newest = from_epoch(max(sr.new))
                latest[provider] = max(latest.get(provider, newest), newest)
                if is_external(provider):
                    if cadence:
                        prov.interval_s = int(cadence.total_seconds())
                    if provider not in result.external_providers:
                        result.external_providers.append(provider)
                    if not prov.display_name or prov.display_name == provider:
                        prov.display_name = provider
            series_db.add(conn, name, sr.new)
        for provider, at in latest.items():
            prov = queries.ensure_provider(session, provider)
            if (prov.last_success_at is None or at > prov.last_success_at) and not _scraped_live(session, provider):
                # Only a provider known from imports alone takes the archive as its current list.
                prov.last_success_at = at
                prov.last_status = "ok"
                if prov.last_attempt_at is None or at > prov.last_attempt_at:
                    prov.last_attempt_at = at
        _refresh_rollups(session, touched)
        finished = utcnow()
        for run in runs.values():
            run.status, run.finished_at = "ok", finished
            run.duration_s = (finished - run.started_at).total_seconds()
            run.error_message = note
        result.providers = sorted(runs)
        result.external_providers.sort()
    return result


IMPORT_NOTE = "import of "


def external_providers(session: Session) -> dict[str, Provider]:
    """Providers known from imported history only: stored, imported, and without a scraper."""
    imported = set(session.exec(
        select(ScrapeRun.provider).where(col(ScrapeRun.error_message).startswith(IMPORT_NOTE)).distinct()
    ).all())
    return {p.name: p for p in session.exec(select(Provider)).all() if p.name in imported and is_external(p.name)}
