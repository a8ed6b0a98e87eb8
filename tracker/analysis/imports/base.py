"""What every importer shares: the result and its summary, bad rows by line number, the
future-timestamp rule, value parsing, and the snapshot record the archive formats produce."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from db.types import utcnow
from scrapers.base import ScrapedOffer
from tracker.analysis.frames import parse_when
from tracker.errors import ConfigError

#: Clock skew allowed before an observation time counts as "in the future".
FUTURE_TOLERANCE = timedelta(minutes=10)

#: Called with (units done, units total) as a long file is read; the CLI draws a progress bar.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class BadRow:
    line: int
    reason: str
    file: str = ""

    def __str__(self) -> str:
        where = f"{self.file} " if self.file else ""
        return f"{where}line {self.line}: {self.reason}"


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

    def summary(self) -> dict[str, Any]:
        gap = "none" if self.max_gap is None else f"{self.max_gap.total_seconds() / 3600:g}h"
        return {
            "file": self.file, "format": self.format, "rows": self.rows, "snapshots": self.snapshots,
            "observations": self.observations, "stored": self.stored, "new_offers": self.new_offers,
            "prices_changed": self.prices_changed, "returned_after_gap": self.returned,
            "quarantined": self.quarantined, "not_gpu": self.not_gpu, "already_stored": self.already_stored,
            "bad_rows": len(self.bad_rows), "providers": ", ".join(self.providers),
            "external_providers": ", ".join(self.external_providers),
            "unmapped_gpus": ", ".join(f"{n} ({c})" for n, c in sorted(self.unmapped.items())),
            "max_gap": gap,
        }


@dataclass
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


#: The longest CSV field read (Python's csv module's own limit): a field past it is a file that is
#: not a price export, refused with its line rather than read into memory.
MAX_FIELD = 128 * 1024


def csv_rows(reader: Any, file: str) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` of a ``csv.DictReader``; a malformed or oversized field is a one-line
    ``ConfigError`` naming the file and line (nothing of the file is imported)."""
    import csv

    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            why = f"a field is longer than {MAX_FIELD // 1024} KiB" if "field limit" in str(exc) else str(exc)
            raise ConfigError(f"import: {file}: the record after line {reader.line_num}: {why}; nothing was imported") from None
        yield reader.line_num, row


def missing_columns(header: list[str], required: list[str], fmt: str) -> None:
    """A header without a column the format needs: one line naming what is missing."""
    missing = [c for c in required if c not in header]
    if missing:
        raise ConfigError(f"import: not a {fmt} file: the header has no {', '.join(missing)} column"
                          f"{'s' if len(missing) > 1 else ''} (got {', '.join(header[:12]) or 'an empty line'})")
