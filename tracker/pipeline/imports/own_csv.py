"""Import price history users already have: our own CSV exports and SkyPilot ``vms.csv``.

Formats (recognised by their header):

* **prices** -- ``gpu-tracker prices --format csv`` (also ``--at``). Each row is an offer's
  interval: listed at its price from ``price_since`` (where the interval began) to
  ``observed_at``. Each offer is a series of its own
  (``csv-prices:<provider>|<sku>|<region>|<kind>|<term>``) whose snapshot times are the
  ``price_since`` and ``observed_at`` of its rows; a row stands for an observation at every
  snapshot time of that series from ``price_since`` to ``observed_at``, and states its
  interval's start: rows of different ``price_since`` never join into one interval, even at
  the same price (what lay between them is unknown), while rows of one interval exported at
  different moments join.
  The provider's ``last_success_at`` moves to the newest ``observed_at`` when it is known from
  imports alone (the file is a snapshot of its list), so ``prices`` round-trips.
* **history** -- ``gpu-tracker history --metric price --format csv``. Each provider column
  is that provider's lowest price for the GPU in the bucket. Every bucket start is a snapshot
  of the series ``csv-history:<gpu>:<kind>``, and each provider's value there is an
  observation of its offer with sku ``history:<gpu>``; an empty cell means the provider did
  not list the GPU then, so the gap stays one. The kind is the row's ``kinds`` column when it
  names one kind, otherwise ``on_demand``. Re-exporting at the same resolution gives the same
  per-provider and market prices.
* **skypilot** -- a SkyPilot catalog ``vms.csv`` (InstanceType, AcceleratorName,
  AcceleratorCount, vCPUs, MemoryGiB, Price, SpotPrice, Region, [AvailabilityZone],
  [GpuInfo]); ``--provider`` and ``--observed-at`` are required. Rows without an
  accelerator (CPU machines) and TPUs are skipped. ``Price`` makes an on-demand offer,
  ``SpotPrice`` a spot one; per-zone rows of one instance type and region are merged into
  the cheapest. SkyPilot names some variants alike (Lambda's PCIe and SXM H100 are both
  "H100"): a form factor written in the instance type (``gpu_1x_h100_pcie``) is added to the
  GPU name before it is resolved. GPU memory comes from GpuInfo's ``SizeInMiB``.

The two exports are stored like the archive formats, by ``snapshots``' batches and rules (no
``max_gap``: the export states its own continuity; a ``prices`` row that is an offer the store
has never seen is written from its tuple, ``fresh.store_rows``), so importing them in one file
or many, in one command or several, in any order, twice or once, stores the same history. A row
whose offer the store already keeps outside the file's series (a live collection's, say) is
left to that history: counted as already stored when it is no newer, reported otherwise.

A SkyPilot ``vms.csv`` goes through the pipeline's own stages -- ``tracker.pipeline.normalise``,
``tracker.pipeline.validate`` (implausible prices are quarantined with their reason) and
``tracker.pipeline.store.store_offers`` -- continuing the intervals the provider's last
collection saw. Observations not newer than what the store already has for an offer are
skipped, so importing the same file twice changes nothing.

Every import is **one transaction**, read and stored in batches inside it (memory stays that of
a batch): either the whole file is stored or nothing is. A row that
cannot be read is reported with its line number and skipped (``strict=True`` refuses the
whole file instead); like a failed scrape, it leaves no trace. Each provider in the file gets
a ``scrape_run`` row (``source`` ``import``, status ``ok``) whose message notes the import.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from functools import lru_cache, partial
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import labels, reads
from db import series as series_db
from db.reader import in_transaction
from db.spans import epoch
from scrapers.base import KINDS, ScrapedOffer
from tracker.catalog.instance_types import instance_gpu
from tracker.catalog.specs import load_catalog, resolve_gpu
from tracker.cells import EXPORT_COLUMNS, unescape
from tracker.errors import ConfigError, TrackerError
from tracker.pipeline import store as store_stage
from tracker.pipeline.imports import base
from tracker.pipeline.imports.aliases import plain_name
from tracker.pipeline.imports.base import (
    SINCE_KEY,
    BadRow,
    ImportResult,
    Progress,
    Snapshot,
    bounded_lines,
    catalog_gpu,
    check_future,
    collection,
    csv_rows,
    files_label,
    missing_columns,
)
from tracker.pipeline.imports.base import number as _float
from tracker.pipeline.imports.base import when as _time
from tracker.pipeline.imports.fresh import OfferRow, store_rows
from tracker.pipeline.imports.snapshots import (
    _Import,
    importing,
    refuse_if_strict,
    release,
    scraped_live,
    store_batch,
    store_snapshots,
)
from tracker.pipeline.normalise import NormalisedOffer, normalise
from tracker.pipeline.validate import validate

SKYPILOT_REQUIRED = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"}
_FORM_TOKENS = {"pcie": "PCIe", "sxm": "SXM", "sxm4": "SXM4", "sxm5": "SXM5", "nvl": "NVL"}
_MIB = re.compile(r"SizeInMiB'?\"?\s*:\s*(\d+)")


#: Columns that tell each format apart even in an export of an empty store (its header is the
#: table's columns only); the full ``_REQUIRED`` set is checked once the file has rows.
_MARKERS = {
    "skypilot": {"InstanceType", "AcceleratorName"},
    "history": {"time", "gpu", "min", "median"},
    "prices": {"provider", "gpu_raw", "price_per_hour", "observed_at"},
}
_REQUIRED = {
    "skypilot": SKYPILOT_REQUIRED,
    "history": {"time", "gpu", "metric", "min", "median"},
    "prices": {"provider", "sku", "kind", "gpu_raw", "gpu_count", "price_per_hour", "currency", "observed_at"},
}


def _file_of(fmt: str) -> str:
    """How a message names a file of ``fmt``."""
    return "SkyPilot vms.csv" if fmt == "skypilot" else f"`{fmt}` export"


def detect_format(header: list[str], *, has_rows: bool = True) -> str:
    """The format a CSV header is written in. A header that is close to one (shares its
    telling columns) but lacks a column the rows need names the missing column."""
    cols = set(header)
    for fmt, marker in _MARKERS.items():
        if marker <= cols:
            if has_rows:
                missing_columns(header, sorted(_REQUIRED[fmt] - cols), _file_of(fmt))
            return fmt
    best = max(_MARKERS, key=lambda f: len(_MARKERS[f] & cols))
    if _MARKERS[best] & cols:
        missing_columns(header, sorted(_MARKERS[best] - cols), _file_of(best))
    raise ConfigError(
        "import: unrecognised CSV header; expected `gpu-tracker prices --format csv`, "
        "`gpu-tracker history --format csv` or a SkyPilot vms.csv "
        f"(got {', '.join(header[:12])}{' ...' if len(header) > 12 else ''})"
    )


def _bool(raw: str | None) -> bool | None:
    text = (raw or "").strip().lower()
    if text in ("", "none", "null"):
        return None
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"available {raw!r} is not true/false")


def _rows(reader: csv.DictReader[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Rows with their line numbers, each cell as it was before the export quoted it for
    spreadsheets (``tracker.cells``); a malformed or oversized field is a one-line error."""
    for line, row in csv_rows(reader, getattr(reader, "file_name", "the file")):
        yield line, {k: unescape(v) if isinstance(v, str) else v for k, v in row.items()}


# --- readers: CSV rows -> snapshots or batches -------------------------------------------------------------


def prices_series(provider: str, sku: str, region: str, kind: str, term_months: int) -> str:
    """The series a ``prices`` row's offer is (every offer is one of its own)."""
    return f"csv-prices:{provider}|{sku}|{region}|{kind}|{term_months}"


#: Distinct cell texts each ``_PricesRow`` cache keeps (memory stays bounded however many
#: distinct values a file holds).
_CACHED = 1 << 16
#: The cells of a ``prices`` row that are read, in ``_PricesRow.read``'s order.
_PRICES_CELLS = ("provider", "sku", "kind", "gpu_raw", "gpu", "gpu_count", "gpu_memory_gb", "price_per_hour",
                 "currency", "observed_at", "price_since", "region", "country", "term_months", "available")
#: ``extra`` of an offer read from a ``prices`` export (and its series' name, and an unstated term).
_PRICES_EXTRA = {"imported": "prices csv"}


class _Refused(str):
    """Why a cell's text means nothing in its column (a cached answer, raised where it is read)."""


def _cell(text: str, key: str, required: bool = True) -> Any:
    """What a ``prices`` cell means in column ``key``: a time (with its epoch second and why it is
    in the future, or ``None``), a provider name or a number; or ``_Refused``, saying why not."""
    try:
        if key in ("observed_at", "price_since"):
            at = _time({key: text}, key)
            try:
                check_future(at, key)
            except ValueError as exc:
                return at, epoch(at), str(exc)
            return at, epoch(at), None
        return plain_name(text, key) if key == "provider" else _float({key: text}, key, required=required)
    except ValueError as exc:
        return _Refused(str(exc))


class _PricesRow:
    """What a ``prices`` row's cells mean, each text judged once per distinct value (the import's
    own caches): an export repeats a few timestamps, providers, GPU names, counts and prices over
    millions of rows, so a row costs the lookups and its tuple, not the parsing."""

    def __init__(self, header: list[str], known: Mapping[str, Any]) -> None:
        col = {name: i for i, name in enumerate(header)}  # the last of a repeated name, as csv.DictReader
        self.width = len(header)
        self.pick = itemgetter(*(col.get(name, self.width) for name in _PRICES_CELLS))  # absent: the empty cell
        self.known = known
        self.meaning = lru_cache(maxsize=_CACHED)(_cell)
        self.gpu = lru_cache(maxsize=_CACHED)(self._gpu)
        self.offers: set[tuple[Any, ...]] = set()  # shapes of rows ``ScrapedOffer`` accepts

    def cell(self, text: str, key: str, required: bool = True) -> Any:
        got = self.meaning(text, key, required)
        if isinstance(got, _Refused):
            raise ValueError(got)
        return got

    def _gpu(self, raw_cell: str, gpu_cell: str, provider: str, count: float, memory: float | None) -> tuple[str | None, str]:
        """(GPU as ``normalise`` names it, raw name) of the row: the catalog names ``gpu_raw``
        (``base.catalog_gpu``); the export's ``gpu`` column is a hint taken only when the catalog
        knows it and the raw name is not a slice (a user alias the export resolved with)."""
        column = gpu_cell.strip() or None
        raw = raw_cell.strip() or (column or "")
        gpu, named, _mem = catalog_gpu([raw], provider=provider, count=count, memory=memory)
        if gpu is not None:
            return gpu, raw
        if named.endswith(" slice"):
            raw = named
        elif column in self.known:
            return column, raw
        return resolve_gpu(raw, memory, provider=provider), raw

    def read(self, cells: list[str], line: int) -> OfferRow:
        """The row (a short row's missing cells empty), its cells unescaped (only a row with a cell
        starting with a quote can hold one an export quoted: most hold none); a row that is no
        offer is a ``ValueError`` or ``TrackerError`` saying why."""
        if len(cells) != self.width:
            cells = cells[:self.width] + [""] * (self.width - len(cells))
        cells.append("")
        values = self.pick(cells)
        if "\x00'" in "\x00" + "\x00".join(values):
            values = tuple(unescape(v) for v in values)
        provider, sku, kind, raw, column, count, memory, price, currency, observed, since, region, country, term, \
            available = values
        observed_at, observed_s, future = self.cell(observed, "observed_at")
        since_at, since_s, _f = self.cell(since, "price_since") if since.strip() else (observed_at, observed_s, None)
        if since_at > observed_at:
            raise ValueError("price_since is after observed_at")
        if future is not None:
            raise ValueError(future)
        provider = self.cell(provider, "provider")
        count, memory = self.cell(count, "gpu_count"), self.cell(memory, "gpu_memory_gb", False)
        gpu, raw = self.gpu(raw, column, provider, count, memory)
        kind, sku, region = kind.strip(), sku.strip(), region.strip()
        term, price = self.cell(term, "term_months", False), self.cell(price, "price_per_hour")
        months = int(term or 0)
        # in ``OfferRow``'s order, not by keyword (which costs three times the tuple); vcpus, ram_gb
        # and available_count an export does not state
        row = OfferRow(provider, sku, region, kind, months, gpu, raw, count, price, price / count if count > 0 else None,
                       currency.strip(), _bool(available), memory, None, None, country.strip() or None, _PRICES_EXTRA,
                       None, kind == "reserved" and not term, since_at, since_s, observed_at, observed_s, line,
                       prices_series(provider, sku, region, kind, months))
        shape = (not sku, raw, kind, row.term_months, row.term_unstated, row.currency, memory)
        if shape not in self.offers:
            _offer(row)  # the offer's own checks, once per shape of row they judge
            if len(self.offers) >= _CACHED:
                self.offers.clear()
            self.offers.add(shape)
        return row


def _offer(r: OfferRow) -> ScrapedOffer:
    """The offer a ``prices`` row lists (a ``ParseError`` when it cannot be one)."""
    return ScrapedOffer(provider=r.provider, sku=r.sku, gpu_raw=r.gpu_raw, gpu_count=r.gpu_count,
                        price_per_hour=r.price_per_hour, kind=r.kind, region=r.region, country=r.country,
                        gpu_memory_gb=r.gpu_memory_gb, term_months=r.term_months, currency=r.currency,
                        available=r.available, gpu=r.gpu, extra={**_PRICES_EXTRA, SINCE_KEY: r.since,
                                                                 **({"term_unstated": True} if r.term_unstated else {})})


def _read_prices(reader: csv.DictReader[str], result: ImportResult, known: Mapping[str, Any],
                 file: str = "") -> Iterator[list[OfferRow]]:
    """The rows of a ``prices`` export, ``BATCH_ROWS`` at a time (an offer whose rows fall in two
    batches is two imports of its series, which store the same history as one), each read as a
    list (``csv.reader``) and each distinct cell text judged once (``_PricesRow``)."""
    rows: list[OfferRow] = []
    meaning = _PricesRow(list(reader.fieldnames or []), known)
    for line, cells in csv_rows(reader.reader, getattr(reader, "file_name", "the file")):
        if not cells:  # a blank line, skipped as ``csv.DictReader`` does
            continue
        result.rows += 1
        try:
            rows.append(meaning.read(cells, line))
        except (ValueError, TrackerError) as exc:
            result.bad(BadRow(line, str(exc), file))
            continue
        if len(rows) >= base.BATCH_ROWS:
            yield rows
            rows = []
    if rows:
        yield rows


def _prices_snapshots(rows: list[OfferRow], file: str) -> Iterator[Snapshot]:
    """A row is an interval: an observation at every snapshot time of its series it spans."""
    by_series: dict[str, list[tuple[OfferRow, ScrapedOffer]]] = defaultdict(list)
    for r in rows:
        by_series[r.series].append((r, _offer(r)))
    for series, spans in by_series.items():
        for at in sorted({t for r, _o in spans for t in (r.since_at, r.observed_at)}):
            for r, offer in spans:
                if r.since_at <= at <= r.observed_at:
                    yield Snapshot(r.provider, series, at, [offer], r.line, file)


def _store_prices(imp: _Import, rows: list[OfferRow], result: ImportResult, file: str,
                  rates: Mapping[str, float] | None) -> None:
    """One batch of a ``prices`` export. A row that is its series' only one in the batch, of an
    offer the store has never seen (no stored snapshot of its series, no stored offer), in a
    currency kept as it is and accepted by ``validate`` is stored set-based from its tuple
    (``fresh.store_rows``); the others go as snapshots through ``snapshots.store_batch``."""
    session = imp.session
    rows_of = Counter(r.series for r in rows)
    stored = series_db.stored_times(session.connection(), rows_of)
    skus: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        skus[r.provider].add(r.sku)
    # a fresh row's offer is never a later row's (each is its series' only row): read once for both
    known = _stored_series(session, skus)
    judged: dict[tuple[float, float, str], bool] = {}
    fresh, rest = [], []
    for r in rows:
        fits = rows_of[r.series] == 1 and r.series not in stored and \
            (r.provider, r.sku, r.region, r.kind, r.term_months) not in known and \
            not (rates and r.currency != "USD" and r.currency in rates)
        if fits and (ok := judged.get((r.gpu_count, r.price_per_hour, r.currency))) is None:
            ok = judged[(r.gpu_count, r.price_per_hour, r.currency)] = not validate([normalise(_offer(r))], {}, {})[1]
        (fresh if fits and ok else rest).append(r)
    if fresh:
        for provider in sorted({r.provider for r in fresh}):
            labels.ensure_provider(session, provider)
        for provider, (lo, hi) in store_rows(session, fresh, imp.run, result, extra=_PRICES_EXTRA).items():
            imp.changed(provider, lo, hi)
            imp.listed(provider, hi, None, result)
    if rest:
        snaps = _leave_foreign(session, list(_prices_snapshots(rest, file)), result, known)
        store_batch(imp, snaps, result, max_gap_s=None, adapt_gap=False, cadence=None, stated_starts=True,
                    one_per_day=False, one_offer_series=True, currency_rates=rates)


def _history_kind(kinds: str) -> str:
    parts = [k.strip() for k in kinds.split(",") if k.strip()]
    return parts[0] if len(parts) == 1 and parts[0] in KINDS and parts[0] != "reserved" else "on_demand"


def _read_history(reader: csv.DictReader[str], result: ImportResult, known: Mapping[str, Any],
                  file: str = "") -> Iterator[Snapshot]:
    header = list(reader.fieldnames or [])
    provider_cols = [c for c in header if c not in EXPORT_COLUMNS]
    for c in provider_cols:
        try:
            plain_name(c, "provider column")
        except ValueError as exc:
            raise ConfigError(f"import: {exc}") from None
    for line, row in _rows(reader):
        result.rows += 1
        try:
            metric = (row.get("metric") or "").strip()
            if metric != "price":
                raise ValueError(f"metric {metric!r}: only price history can be imported (export with --metric price)")
            at = _time(row, "time")
            check_future(at, "time")
            gpu = (row.get("gpu") or "").strip()
            if gpu not in known:
                raise ValueError(f"gpu {gpu!r} is not a catalog id")
            kind = _history_kind(row.get("kinds") or "")
            cells = [(p, _float(row, p, required=False)) for p in provider_cols]
            offers = [
                ScrapedOffer(provider=p, sku=f"history:{gpu}", gpu_raw=gpu, gpu_count=1, price_per_hour=v,
                             kind=kind, gpu=gpu, extra={"imported": "history csv"})
                for p, v in cells if v is not None
            ]
        except (ValueError, TrackerError) as exc:
            result.bad(BadRow(line, str(exc), file))
            continue
        # every bucket is a collection of every provider: one without a value did not list the GPU
        yield from collection(f"csv-history:{gpu}:{kind}", at, offers, line, file)


def _skypilot_gpu_name(accelerator: str, instance_type: str) -> str:
    low = accelerator.lower()
    if any(t in low for t in ("pcie", "sxm", "nvl")):
        return accelerator
    for token in re.split(r"[_.\-\s]+", instance_type.lower()):
        if token in _FORM_TOKENS:
            return f"{accelerator} {_FORM_TOKENS[token]}"
    return accelerator


def read_skypilot_rows(reader: csv.DictReader[str], result: ImportResult, provider: str, file: str = "") -> list[ScrapedOffer]:
    """The offers of one SkyPilot ``vms.csv`` (CPU rows and TPUs skipped, zones merged into the cheapest)."""
    best: dict[tuple[str, str, str], tuple[float, ScrapedOffer]] = {}
    for line, row in _rows(reader):
        result.rows += 1
        accelerator = (row.get("AcceleratorName") or "").strip()
        if not accelerator or accelerator.lower().startswith("tpu"):
            result.not_gpu += 1
            continue
        try:
            itype = (row.get("InstanceType") or "").strip()
            region = (row.get("Region") or "").strip()
            if not itype or not region:
                raise ValueError("InstanceType and Region must not be empty")
            count = _float(row, "AcceleratorCount")
            price = _float(row, "Price", required=False)
            spot = _float(row, "SpotPrice", required=False) if "SpotPrice" in row else None
            if price is None and spot is None:
                raise ValueError("neither Price nor SpotPrice is given")
            mib = _MIB.search(row.get("GpuInfo") or "")
            hint = instance_gpu(itype, provider)
            common: dict[str, Any] = dict(
                provider=provider, sku=itype, region=region, gpu_raw=_skypilot_gpu_name(accelerator, itype),
                gpu_count=count, gpu_memory_gb=int(mib.group(1)) / 1024 if mib else None,
                vcpus=_float(row, "vCPUs", required=False), ram_gb=_float(row, "MemoryGiB", required=False),
                gpu=hint[0] if hint else None,
            )
            zone = (row.get("AvailabilityZone") or "").strip()
            for kind, value in (("on_demand", price), ("spot", spot)):
                if value is None:
                    continue
                extra = {"imported": "skypilot vms.csv", **({"availability_zone": zone} if zone else {})}
                offer = ScrapedOffer(kind=kind, price_per_hour=value, extra=extra, **common)
                key = (itype, region, kind)
                if key not in best or value < best[key][0]:
                    best[key] = (value, offer)
        except (ValueError, TrackerError) as exc:
            result.bad(BadRow(line, str(exc).splitlines()[0], file))
    return [o for _, o in best.values()]


# --- store ------------------------------------------------------------------------------------------


def _not_newer(session: Session, provider: str, offers: list[NormalisedOffer], at: datetime) -> set[tuple[str, str, str, int]]:
    """Identities the store already has an observation for at or after ``at``."""
    stored = reads.offers_of_skus(in_transaction(session.connection()), provider, sorted({o.sku for o in offers}))
    seen = {ident: last_seen for ident, _extra, last_seen in stored}
    return {o.identity for o in offers if o.identity in seen and seen[o.identity] >= at}


def _stored_series(session: Session, skus: Mapping[str, set[str]]) -> dict[tuple[str, str, str, str, int],
                                                                           tuple[str | None, datetime]]:
    """(provider, *identity) -> (series, last seen) of the stored offers of each provider's ``skus``."""
    reader = in_transaction(session.connection())
    return {(provider, *ident): (series_db.series_of(extra), last_seen) for provider, names in skus.items()
            for ident, extra, last_seen in reads.offers_of_skus(reader, provider, names)}


def _leave_foreign(session: Session, found: list[Snapshot], result: ImportResult,
                   stored: Mapping[tuple[str, str, str, str, int], tuple[str | None, datetime]] | None = None,
                   ) -> list[Snapshot]:
    """``found`` (one batch) without the offers the store keeps outside their snapshot's series
    (their history is that series' or a live collection's): counted as already stored when no
    newer than the stored offer, otherwise reported by line. Reads only the batch's offers
    (``stored``: read already, ``_stored_series`` of at least those)."""
    if stored is None:
        wanted: dict[str, set[str]] = defaultdict(set)
        for snap in found:
            for o in snap.offers:
                wanted[o.provider].add(o.sku)
        stored = _stored_series(session, wanted)
    if not stored:
        return found
    kept, reported = [], set()
    for snap in found:
        offers = []
        for o in snap.offers:
            have = stored.get((o.provider, o.sku, o.region, o.kind, o.term_months))
            if have is None or have[0] == snap.series:
                offers.append(o)
            elif snap.at.replace(microsecond=0) <= have[1]:
                result.observations += 1
                result.already_stored += 1
            elif (snap.file, snap.line) not in reported:
                reported.add((snap.file, snap.line))
                result.bad(BadRow(snap.line, f"offer {o.sku!r} of {o.provider} is collected live (or by "
                                             "another import); its history there is kept", snap.file))
        if offers or not snap.provider:
            kept.append(replace(snap, offers=offers))
    return kept


def _store(imp: _Import, provider: str, offers: list[ScrapedOffer], observed_at: datetime, result: ImportResult,
           rates: Mapping[str, float] | None) -> None:
    """One SkyPilot vms.csv: one collection of ``provider`` at ``observed_at`` through the pipeline's
    stages, continuing the intervals its last collection saw; offers the store has seen at or
    after ``observed_at`` are skipped."""
    session = imp.session
    prov = labels.ensure_provider(session, provider)
    run = imp.run(provider)
    normalised = [normalise(o, rates) for o in offers]
    result.observations += len(normalised)
    stale = _not_newer(session, provider, normalised, observed_at)
    result.already_stored += len(stale)
    fresh = [o for o in normalised if o.identity not in stale]
    if not fresh:
        return
    known = store_stage.provider_state(session.connection(), provider)  # read once for validation and the store
    accepted, rejected = validate(fresh, store_stage.previous_prices(session.connection(), known), {})
    previous = None
    if prov.last_success_at and prov.last_success_at < observed_at:
        previous = prov.last_success_at  # continue intervals seen by the last real scrape
    stats = store_stage.store_offers(session, provider, accepted, observed_at, previous, known)
    quarantined = store_stage.store_quarantine(session, run.id, rejected, observed_at)
    run.offers_seen, run.new_offers, run.prices_changed = len(fresh), stats.new_offers, stats.prices_changed
    run.quarantined = quarantined
    result.stored += len(accepted)
    result.new_offers += stats.new_offers
    result.prices_changed += stats.prices_changed
    result.quarantined += quarantined
    if (prov.last_success_at is None or observed_at > prov.last_success_at) \
            and not scraped_live(session, provider, run.id):
        # Only a provider known from imports alone takes the file as its current list: one
        # that is really scraped keeps what its last scrape listed.
        prov.last_success_at = observed_at


def import_file(engine: Engine, path: str | Path, **options: Any) -> ImportResult:
    """Import one CSV file (format detected from its header) in one transaction; ``options`` as ``import_files``."""
    return import_files(engine, [Path(path)], **options)


def _open_csv(path: Path, fh: IO[str], progress: Progress | None = None) -> tuple[csv.DictReader[str], str]:
    """A reader of ``fh`` (its header's cells unescaped) and the export's format."""
    lines = bounded_lines(fh, path.name, "a price export row", progress)
    head, first = next(lines, ""), next(lines, "")
    reader = csv.DictReader(itertools.chain([head, first], lines))
    try:
        header = [unescape(h.strip()) for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise ConfigError(f"import: {path.name} line 1: the header cannot be read ({exc})") from None
    reader.fieldnames = header
    fmt = detect_format(header, has_rows=bool(first.strip()))
    reader.file_name = path.name  # type: ignore[attr-defined]
    return reader, fmt


def import_files(
    engine: Engine,
    paths: list[Path],
    *,
    provider: str | None = None,
    observed_at: datetime | None = None,
    currency_rates: Mapping[str, float] | None = None,
    catalog: Mapping[str, Any] | None = None,
    strict: bool = False,
    progress: Progress | None = None,
) -> ImportResult:
    """Import CSV files (formats detected from their headers) in one transaction, read and
    stored in batches: exports of one format, or one SkyPilot vms.csv. With several files, bad
    rows name their file."""
    known = catalog if catalog is not None else load_catalog()
    label = str(paths[0]) if len(paths) == 1 else files_label(paths)
    formats = []
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"import: {path} is not a file")
        with path.open(newline="", encoding="utf-8-sig") as fh:
            formats.append(_open_csv(path, fh)[1])
        if formats[-1] != formats[0]:
            raise ConfigError(f"import: {path.name} is a {formats[-1]} CSV, {paths[0].name} a {formats[0]} one; "
                              "import them apart")
    fmt = formats[0]
    result = ImportResult(label, fmt)
    note = partial(result.note, files_label(paths))

    if fmt == "skypilot":
        return _import_skypilot(engine, paths, result, provider, observed_at, note, currency_rates, strict)
    if provider or observed_at:
        raise ConfigError(f"import: --provider and --observed-at are for SkyPilot files; a {fmt} export names its own")
    if fmt == "prices":
        with importing(engine, result, max_gap=None, note=note, strict=strict) as imp:
            for path in paths:
                file = path.name if len(paths) > 1 else ""
                with path.open(newline="", encoding="utf-8-sig") as fh:
                    for rows in _read_prices(_open_csv(path, fh, progress)[0], result, known, file):
                        refuse_if_strict(result, strict)
                        _store_prices(imp, rows, result, file, currency_rates)
                        release(imp.session)
        return result

    def found() -> Iterator[Snapshot]:
        for path in paths:
            with path.open(newline="", encoding="utf-8-sig") as fh:
                reader, _fmt = _open_csv(path, fh, progress)
                yield from _read_history(reader, result, known, path.name if len(paths) > 1 else "")

    return store_snapshots(engine, found(), result, max_gap=None, note=note, currency_rates=currency_rates,
                           strict=strict, screen=_leave_foreign)


def _import_skypilot(engine: Engine, paths: list[Path], result: ImportResult, provider: str | None,
                     observed_at: datetime | None, note: Callable[[], str], currency_rates: Mapping[str, float] | None,
                     strict: bool) -> ImportResult:
    """One SkyPilot vms.csv: one collection of ``provider`` at ``observed_at`` (zones merged, so read whole)."""
    if len(paths) > 1:
        raise ConfigError("import: a SkyPilot vms.csv is imported alone (or use skypilot-git for a clone)")
    if not provider or observed_at is None:
        raise ConfigError("import: a SkyPilot vms.csv needs --provider and --observed-at")
    try:
        provider = plain_name(provider, "--provider")
    except ValueError as exc:
        raise ConfigError(f"import: {exc}") from None
    try:
        check_future(observed_at, "--observed-at")
    except ValueError as exc:
        raise ConfigError(f"import: {exc}") from None
    with paths[0].open(newline="", encoding="utf-8-sig") as fh:
        reader, _fmt = _open_csv(paths[0], fh)
        offers = read_skypilot_rows(reader, result, provider)
    refuse_if_strict(result, strict)
    with importing(engine, result, max_gap=None, note=note, strict=strict) as imp:
        if offers:
            _store(imp, provider, offers, observed_at, result, currency_rates)
    return result
