"""Raw-interval retention: raw price intervals are kept ``retention.raw_days``, roll-ups forever.

``prune_raw`` deletes the intervals that count in no bucket from the horizon on (the horizon
is a day boundary and only moves forward, ``db.rollups.prune``), so every answer about the
time from the horizon on is unchanged and older buckets are answered by the roll-ups. It runs
after collections (``after_collect``, a built-in hook) at most once per day, and on demand
(``gpu-tracker rollups prune``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from db import reads, rollups
from db.reader import in_transaction
from db.spans import epoch, from_epoch, utcnow
from tracker.config.settings import Settings


def horizon_for(raw_days: int, now: datetime) -> int:
    """Epoch seconds of the day boundary ``raw_days`` before ``now``."""
    return rollups.floor(epoch(now - timedelta(days=raw_days)), rollups.DAY)


def prune_raw(engine: Engine, raw_days: int, now: datetime | None = None) -> tuple[int, datetime]:
    """Delete raw intervals older than ``raw_days`` (see the module docstring): (deleted, horizon)."""
    with engine.begin() as conn:
        deleted = rollups.prune(conn, horizon_for(raw_days, now or utcnow()))
        return deleted, from_epoch(reads.raw_horizon(in_transaction(conn)))


def rebuild_rollups(engine: Engine) -> int:
    """Recompute every roll-up from the stored raw intervals (after an import or a migration)."""
    with engine.begin() as conn:
        return rollups.rebuild(conn)


def after_collect(engine: Engine, settings: Settings, results: Any) -> None:
    """Prune once the horizon has moved to a new day (one cheap query otherwise)."""
    with engine.connect() as conn:
        current = reads.raw_horizon(in_transaction(conn))
    if horizon_for(settings.retention.raw_days, utcnow()) > current:
        prune_raw(engine, settings.retention.raw_days)
