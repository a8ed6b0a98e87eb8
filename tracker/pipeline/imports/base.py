"""What every importer shares: the result and its summary, bad rows by line number, the
future-timestamp rule, value parsing, and the snapshot record the archive formats produce."""

from __future__ import annotations

import csv
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from db.reads import IMPORT_NOTE, Identity
from db.spans import parse_when, utcnow
from scrapers.base import ScrapedOffer
from tracker.catalog.names import MEMORY_LOW
from tracker.catalog.specs import load_catalog, resolve_gpu
from tracker.errors import ConfigError
from tracker.pipeline.validate import HELD, Rejected

#: Clock skew allowed before an observation time counts as "in the future".
FUTURE_TOLERANCE = timedelta(minutes=10)

#: Called with (units done, units total) as a long file is read; the CLI draws a progress bar.
Progress = Callable[[int, int], None]
#: ``ScrapedOffer.extra`` key of the epoch second at which the source says the observation's
#: interval began (``store_snapshots(stated_starts=True)``); used while re-cutting, not stored with the offer.
SINCE_KEY = "interval_since"


def held_prices(rejected: Iterable[Rejected]) -> dict[Identity, float]:
    """The prices ``validate`` held for confirmation, by identity: what the next snapshot's judgement
    takes as ``pending`` (seeing one again confirms it)."""
    return {r.offer.identity: r.offer.price_per_hour for r in rejected
            if r.reason.endswith(HELD) and r.offer.price_per_hour is not None}


@dataclass(frozen=True, slots=True)
class BadRow:
    line: int
    reason: str
    file: str = ""

    def __str__(self) -> str:
        where = f"{self.file} " if self.file else ""
        return f"{where}line {self.line}: {self.reason}"


#: Bad rows kept for the report (the rest are counted), and series named in a summary line.
MAX_BAD_ROWS = 1000
MAX_LISTED = 10


def _hours(span: timedelta | None) -> str:
    return "none" if span is None else f"{span.total_seconds() / 3600:.3g}h"


@dataclass
class ImportResult:
    file: str
    format: str
    rows: int = 0
    observations: int = 0
    stored: int = 0
    new_offers: int = 0
    prices_changed: int = 0
    returned: int = 0
    quarantined: int = 0
    not_gpu: int = 0
    already_stored: int = 0
    snapshots: int = 0
    providers: list[str] = field(default_factory=list)
    external_providers: list[str] = field(default_factory=list)
    bad_rows: list[BadRow] = field(default_factory=list)
    #: raw GPU name -> how many stored observations carried it without a catalog match
    unmapped: Counter[str] = field(default_factory=Counter)
    max_gap: timedelta | None = None
    #: series whose gap differs from ``max_gap`` (taken from their own snapshot spacing)
    gaps: dict[str, timedelta] = field(default_factory=dict)
    #: series whose median snapshot spacing exceeds the gap used: every snapshot starts anew
    wide_spacing: dict[str, timedelta] = field(default_factory=dict)
    #: every bad row, ``bad_rows`` keeps the first ``MAX_BAD_ROWS`` of them
    bad_total: int = 0

    def bad(self, row: BadRow) -> None:
        """Report a skipped row (the first ``MAX_BAD_ROWS`` are kept; a file of bad rows costs no memory)."""
        self.bad_total += 1
        if len(self.bad_rows) < MAX_BAD_ROWS:
            self.bad_rows.append(row)

    def warnings(self) -> list[str]:
        """What the summary warns about: snapshots further apart than the gap."""
        return [f"{name}: snapshots about {_hours(spacing)} apart, more than the gap "
                f"{_hours(self.gaps.get(name, self.max_gap))}: each one starts new intervals, so no price change "
                "can be seen (if the archive collected that rarely, give a --max-gap wider than its spacing)"
                for name, spacing in sorted(self.wide_spacing.items())[:MAX_LISTED]]

    def note(self, files: str) -> str:
        """The message of the import's runs (``files``: how it names what it read; ``db.reads.imported_sources`` reads it)."""
        return f"{IMPORT_NOTE}{files} ({self.format} format, {self.rows} rows, {self.bad_total} bad)"

    def summary(self) -> dict[str, Any]:
        gap = "none" if self.max_gap is None else _hours(self.max_gap)
        gaps = sorted(self.gaps.items())
        listed = ", ".join(f"{n} {_hours(g)}" for n, g in gaps[:MAX_LISTED])
        if len(gaps) > MAX_LISTED:
            listed += f" and {len(gaps) - MAX_LISTED} more"
        return {
            "file": self.file, "format": self.format, "rows": self.rows, "snapshots": self.snapshots,
            "observations": self.observations, "stored": self.stored, "new_offers": self.new_offers,
            "prices_changed": self.prices_changed, "returned_after_gap": self.returned,
            "quarantined": self.quarantined, "not_gpu": self.not_gpu, "already_stored": self.already_stored,
            "bad_rows": self.bad_total, "providers": ", ".join(self.providers),
            "external_providers": ", ".join(self.external_providers),
            "unmapped_gpus": ", ".join(f"{n} ({c})" for n, c in sorted(self.unmapped.items())),
            "max_gap": gap, "series_gaps": listed or "-",
            "warnings": "; ".join(self.warnings()) or "-",
        }


def files_label(paths: Sequence[Path]) -> str:
    """How an import names its files: the first three, and how many more."""
    return ", ".join(p.name for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


@dataclass(slots=True)
class Snapshot:
    """What one archive saw of one provider at one time, for one series.

    A *series* is the part of a provider's list one archive speaks for (the provider's H100
    rows of one aggregator file, a cloud's SkyPilot catalog): an offer of the series missing
    from a snapshot is no longer listed, while offers outside it are left alone."""

    provider: str
    series: str
    at: datetime
    offers: list[ScrapedOffer] = field(default_factory=list)
    line: int = 0
    file: str = ""


def collection(series: str, at: datetime, offers: Sequence[ScrapedOffer], line: int = 0,
               file: str = "") -> Iterator[Snapshot]:
    """One collection of ``series`` at ``at``: its time (a snapshot of no provider: the series was
    collected then, so an offer of it missing here is no longer listed), then each provider's offers."""
    yield Snapshot("", series, at, [], line, file)
    for provider in sorted({o.provider for o in offers}):
        yield Snapshot(provider, series, at, [o for o in offers if o.provider == provider], line, file)


#: A name that says it is part of a GPU: a MIG profile (``1g.34gb``), a vGPU, a Vultr ``vcg-`` plan.
SLICE = re.compile(r"\bmig\b|\d+g\.\d+gb|^vcg-|vgpu|fractional|\bslice\b", re.I)
#: A name that states the card's form factor: the catalog's answer for it is not a family default
#: (Hyperstack's ``NVIDIA H100`` is a PCIe card that a bare name resolves to the SXM default).
FORM_FACTOR = re.compile(r"pcie|sxm|\bnvl\b|hgx", re.I)


def _per_gpu_memory(memory: float | None, count: float) -> list[float | None]:
    """The memory figures to try per GPU: as stated, and divided by the count (an instance's total)."""
    if memory is None or memory <= 0:
        return [None]
    return [memory, memory / count] if count > 1 else [memory]


def catalog_gpu(names: Sequence[str], *, provider: str | None, count: float = 1.0,
                memory: float | None = None) -> tuple[str | None, str, float | None]:
    """(catalog GPU id or ``None``, raw name, memory per GPU) of an archive row, named by the
    project's catalog (``resolve_gpu``, as a scrape names its offers), never by the archive's own label.

    ``names``: what the row calls its GPU, the provider's own name (sku, instance type) before
    the archive's label, which is only a hint: the first that the catalog resolves wins, except
    that a name stating the form factor (PCIe, SXM, NVL) wins over one that does not. A
    **slice** -- a count below one, any name that says MIG, vGPU or a fraction, or memory per GPU
    below the whole card's -- is never stored as a whole GPU: it keeps its raw name with
    ``slice`` (which no catalog rule resolves) and is reported unmapped, as is a name the catalog
    does not know."""
    return _catalog_gpu(tuple(names), provider, count, memory)


@lru_cache(maxsize=8192)
def _catalog_gpu(names: tuple[str, ...], provider: str | None, count: float,
                 memory: float | None) -> tuple[str | None, str, float | None]:
    """``catalog_gpu``, once per distinct row naming (an archive repeats a few names a million times)."""
    names = tuple(n for n in dict.fromkeys(n.strip() for n in names) if n)
    raw = names[0] if names else ""
    sliced = 0 < count < 1 or any(SLICE.search(n) for n in names)
    for name in sorted(names, key=lambda n: FORM_FACTOR.search(n) is None):  # stable: sku first among equals
        for mem in _per_gpu_memory(memory, count):
            gpu = resolve_gpu(name, mem, provider=provider)
            if gpu is not None:
                return (None, _sliced(raw), mem) if sliced else (gpu, name, mem)
    # memory below the whole card's: a slice of it (an A10 with 4 GB), never the card
    whole = next((g for g in (resolve_gpu(n, None, provider=provider) for n in names) if g is not None), None)
    vram = load_catalog()[whole].vram_gb if whole is not None else None
    if memory is not None and vram and memory < MEMORY_LOW * vram:
        sliced = True
    return None, _sliced(raw) if sliced else raw, memory


def _sliced(raw: str) -> str:
    return raw if raw.endswith(" slice") else f"{raw} slice"


def check_future(at: datetime, what: str) -> None:
    """Refuse a time after now (plus clock skew): no archive can have seen the future."""
    if at > utcnow() + FUTURE_TOLERANCE:
        raise ValueError(f"{what} {at.isoformat()} is in the future")


def number(row: Mapping[str, Any], key: str, *, required: bool = True) -> float | None:
    raw = row.get(key)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    text = (raw or "").strip() if isinstance(raw, str) else ""
    if not text:
        if required:
            raise ValueError(f"{key} is empty")
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{key} {text!r} is not a number") from None


def when(row: Mapping[str, Any], key: str) -> datetime:
    raw = row.get(key)
    text = raw.strip() if isinstance(raw, str) else ""
    if not text:
        raise ValueError(f"{key} is empty")
    try:
        return parse_when(text)
    except ConfigError:
        raise ValueError(f"{key} {text!r} is not an ISO date-time") from None


#: The longest line read (characters): a longer one is refused with its number before more of it
#: is held in memory (a price row is well under a kilobyte).
MAX_LINE = 1 << 20
#: Offers (rows) an import reads, judges and writes at a time, inside its one transaction: what
#: it holds in memory is about this many rows' worth, whatever the size of its files.
BATCH_ROWS = 20_000
#: Lines between two progress reports.
PROGRESS_EVERY = 5000


def bounded_lines(fh: IO[str], file: str, what: str, progress: Progress | None = None, *,
                  csv: bool = True) -> Iterator[str]:
    """The lines of ``fh``, each at most ``MAX_LINE`` characters (a longer one is a one-line
    ``ConfigError`` naming the file and line, or for a CSV file the field past ``MAX_FIELD`` that
    makes it so: nothing of the file is imported), reporting progress as (characters read, file size)."""
    try:
        size = max(os.fstat(fh.fileno()).st_size, 1)
    except (OSError, ValueError):
        size = 1
    done = 0
    for n, line in enumerate(iter(lambda: fh.readline(MAX_LINE + 1), ""), start=1):
        if len(line) > MAX_LINE:
            if csv and max(len(cell) for cell in line.split(",")) > MAX_FIELD:  # the same words as ``csv_rows``
                raise ConfigError(f"import: {file}: the record after line {n - 1}: a field is longer than "
                                  f"{MAX_FIELD // 1024} KiB; nothing was imported")
            raise ConfigError(f"import: {file} line {n}: longer than {MAX_LINE // 1024} KiB; not {what}; "
                              "nothing was imported")
        done += len(line)
        if progress is not None and n % PROGRESS_EVERY == 0:
            progress(min(done, size), size)
        yield line
    if progress is not None:
        progress(size, size)


#: The longest CSV field read (Python's csv module's own limit): a field past it is a file that is
#: not a price export, refused with its line rather than read into memory.
MAX_FIELD = 128 * 1024


def csv_rows(reader: Any, file: str) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` of a ``csv.DictReader``; a malformed or oversized field is a one-line
    ``ConfigError`` naming the file and line (nothing of the file is imported)."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise csv_error(exc, file, reader.line_num) from None
        yield reader.line_num, row


def csv_records(fh: IO[str], file: str, what: str, required: list[str], fmt: str,
                progress: Progress | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` of an archive's CSV file (``bounded_lines``, ``csv_rows``), its header's
    names stripped; a header without a ``required`` column is refused (``missing_columns``)."""
    reader = csv.DictReader(bounded_lines(fh, file, what, progress))
    header = [h.strip() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    missing_columns(header, required, fmt)
    yield from csv_rows(reader, file)


def csv_error(exc: Exception, file: str, line: int) -> ConfigError:
    """The one-line error of a malformed or oversized CSV field after ``line``."""
    why = f"a field is longer than {MAX_FIELD // 1024} KiB" if "field limit" in str(exc) else str(exc)
    return ConfigError(f"import: {file}: the record after line {line}: {why}; nothing was imported")


def missing_columns(header: list[str], required: list[str], fmt: str) -> None:
    """A header without a column the format needs: one line naming what is missing."""
    missing = [c for c in required if c not in header]
    if missing:
        raise ConfigError(f"import: not a {fmt} file: the header has no {', '.join(missing)} column"
                          f"{'s' if len(missing) > 1 else ''} (got {', '.join(header[:12]) or 'an empty line'})")
