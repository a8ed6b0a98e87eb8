"""What ``gpu-tracker status`` reports: the schedule, each provider's health, the active scheduler.

Read-only: it looks at the job store table, ``provider``, ``scrape_run`` and
``scheduler_leader``, and works whether or not a scheduler is running.
"""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from db import reads
from db.engine import engine_reader
from db.reader import Reader
from db.spans import utcnow
from scrapers.registry import all_scrapers
from tracker.config.settings import Settings
from tracker.service import leader
from tracker.service.scheduler import JOB_PREFIX, JOB_TABLE, RETRY_PREFIX

#: A provider with no success for this many intervals is flagged stale.
STALE_INTERVALS = 3

@dataclass(frozen=True, slots=True)
class StoredJob:
    provider: str
    next_run: datetime | None
    interval_s: float | None


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    provider: str
    enabled: bool
    scheduled: bool
    interval_s: float
    next_run: datetime | None
    last_run: datetime | None
    last_status: str | None
    last_error: str | None
    consecutive_failures: int
    last_success: datetime | None
    stale: bool
    #: When a failed provider's early retry is due (``retry:<provider>`` job), if one is pending.
    retry_at: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def stored_jobs(reader: Reader) -> dict[str, StoredJob]:
    """The collection jobs in the job store, by provider (empty when no scheduler ever ran)."""
    out: dict[str, StoredJob] = {}
    for job_id, next_ts, state in reads.scheduler_jobs(reader, JOB_TABLE, JOB_PREFIX):
        interval: float | None = None
        try:  # our own table, written by our scheduler
            trigger = pickle.loads(state).get("trigger")
            interval = trigger.interval.total_seconds()
        except Exception:  # noqa: BLE001 - an unreadable job still has a next run time
            pass
        name = job_id[len(JOB_PREFIX):]
        next_run = datetime.fromtimestamp(next_ts, UTC) if next_ts is not None else None
        out[name] = StoredJob(name, next_run, interval)
    return out


def stored_retries(reader: Reader) -> dict[str, datetime]:
    """Pending retries of failed providers in the job store: provider -> run time."""
    return {job_id[len(RETRY_PREFIX):]: datetime.fromtimestamp(ts, UTC)
            for job_id, ts, _state in reads.scheduler_jobs(reader, JOB_TABLE, RETRY_PREFIX) if ts is not None}


def provider_statuses(engine: Engine, settings: Settings, now: datetime | None = None) -> list[ProviderStatus]:
    now = now or utcnow()
    scrapers = all_scrapers()
    with engine_reader(engine) as reader:
        jobs, retries = stored_jobs(reader), stored_retries(reader)
        stored = reads.providers(reader)
        latest, first = reads.latest_run_per_provider(reader), reads.first_run_at(reader)
    active = {n for n, cls in scrapers.items() if cls.retired is None}  # a retired one is never scheduled
    names = sorted({n for n in active if settings.provider(n).enabled} | set(jobs) | set(stored))
    out = []
    for name in names:
        enabled = settings.provider(name).enabled if name in active else False
        job = jobs.get(name)
        interval = (job.interval_s if job and job.interval_s else None) or settings.interval_for(name, scrapers.get(name))
        p = stored.get(name)
        run = latest.get(name)
        last_success = p.last_success_at if p else None
        reference = last_success or first.get(name)
        stale = bool(
            (enabled or job is not None)
            and run is not None
            and run.status != "skipped"
            and reference is not None
            and now - reference > timedelta(seconds=STALE_INTERVALS * interval)
        )
        error = f"{run.error_class}: {run.error_message}" if run is not None and run.error_class else None
        out.append(ProviderStatus(
            provider=name, enabled=enabled, scheduled=job is not None, interval_s=interval,
            next_run=job.next_run if job else None, last_run=run.started_at if run else None,
            last_status=run.status if run else None, last_error=error,
            consecutive_failures=p.consecutive_failures if p else 0, last_success=last_success, stale=stale,
            retry_at=retries.get(name),
        ))
    return out


def scheduler_state(engine: Engine, now: datetime | None = None) -> dict[str, Any]:
    """Whether a scheduler is active on this database, who it is and since when."""
    info = leader.read_leader(engine)
    if info is None:
        return {"active": False, "pid": None, "host": None, "since": None, "heartbeat_at": None, "stopped_at": None}
    return {
        "active": info.active(now),
        "pid": info.pid,
        "host": info.host,
        "since": info.since,
        "heartbeat_at": info.heartbeat_at,
        "stopped_at": info.stopped_at,
    }
