"""What ``gpu-tracker providers`` reads of the store: each stored provider's row, its newest
scrape run, and which providers an archive import wrote, in ``db.sql``'s text.

Every function takes a ``db.reader.Reader`` (``db.direct``: the store's own driver), a Core
``Connection`` or an ORM ``Session``, like ``db.asof``: listing providers on a current store
imports neither SQLAlchemy nor the ORM models.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from db import sql as q
from db.reader import reader_of, utc_datetime

if TYPE_CHECKING:
    from db.asof import Source


class ProviderRow(NamedTuple):
    """The columns of a ``provider`` row the listing shows (``db.models.Provider``'s names)."""

    name: str
    display_name: str
    last_run_at: datetime | None
    last_status: str | None
    last_success_at: datetime | None
    consecutive_failures: int


class LastRun(NamedTuple):
    """A provider's newest ``scrape_run``: its status and error message."""

    status: str
    error_message: str | None


def provider_rows(source: Source) -> dict[str, ProviderRow]:
    """Every stored provider by name (``db.queries.provider_rows``)."""
    rows: list[Any] = reader_of(source).rows(q.PROVIDER_ROWS)
    return {name: ProviderRow(name, shown, utc_datetime(run), status, utc_datetime(success), int(failures))
            for name, shown, run, status, success, failures in rows}


def latest_runs(source: Source) -> dict[str, LastRun]:
    """Each provider's newest scrape run (``db.queries.latest_run_per_provider``)."""
    return {provider: LastRun(status, message) for provider, status, message in reader_of(source).rows(q.LATEST_RUNS)}


def imported_providers(source: Source) -> set[str]:
    """The providers an archive import wrote runs for."""
    return {name for (name,) in reader_of(source).rows(q.IMPORTED_PROVIDERS)}
