"""What ``gpu-tracker status`` reports: the schedule, each provider's health, the active scheduler.

Read-only: it looks at the job store table, ``provider``, ``scrape_run`` and
``scheduler_leader``, and works whether or not a scheduler is running.
"""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Column,
    Float,
    LargeBinary,
    MetaData,
    Table,
    Unicode,
    func,
    inspect,
)
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db.models import Provider, ScrapeRun
from db.types import utcnow
from scrapers.registry import all_scrapers
from tracker.config.settings import Settings
from tracker.service import leader
from tracker.service.scheduler import JOB_PREFIX, JOB_TABLE, RETRY_PREFIX

#: A provider with no success for this many intervals is flagged stale.
STALE_INTERVALS = 3

_jobs = Table(
    JOB_TABLE, MetaData(),
    Column("id", Unicode(191), primary_key=True),
    Column("next_run_time", Float(25)),
    Column("job_state", LargeBinary, nullable=False),
)


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


def stored_jobs(engine: Engine) -> dict[str, StoredJob]:
    """The collection jobs in the job store, by provider (empty when no scheduler ever ran)."""
    if not inspect(engine).has_table(JOB_TABLE):
        return {}
    out: dict[str, StoredJob] = {}
    with engine.connect() as conn:
        rows = conn.execute(sa_select(_jobs).where(_jobs.c.id.like(JOB_PREFIX + "%"))).all()
    for job_id, next_ts, state in rows:
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


def stored_retries(engine: Engine) -> dict[str, datetime]:
    """Pending retries of failed providers in the job store: provider -> run time."""
    if not inspect(engine).has_table(JOB_TABLE):
        return {}
    with engine.connect() as conn:
        rows = conn.execute(sa_select(_jobs.c.id, _jobs.c.next_run_time)
                            .where(_jobs.c.id.like(RETRY_PREFIX + "%"))).all()
    return {job_id[len(RETRY_PREFIX):]: datetime.fromtimestamp(ts, UTC) for job_id, ts in rows if ts is not None}


def _runs(session: Session) -> tuple[dict[str, ScrapeRun], dict[str, datetime]]:
    """The latest run of every provider, and when each first ran."""
    latest_ids = select(func.max(ScrapeRun.id)).group_by(ScrapeRun.provider).scalar_subquery()
    latest = {r.provider: r for r in session.exec(select(ScrapeRun).where(col(ScrapeRun.id).in_(latest_ids))).all()}
    first = {p: t for p, t in session.exec(select(ScrapeRun.provider, func.min(ScrapeRun.started_at))
                                           .group_by(ScrapeRun.provider)).all()}
    return latest, first


def provider_statuses(engine: Engine, settings: Settings, now: datetime | None = None) -> list[ProviderStatus]:
    now = now or utcnow()
    jobs = stored_jobs(engine)
    retries = stored_retries(engine)
    scrapers = all_scrapers()
    with Session(engine) as session:
        stored = {p.name: p for p in session.exec(select(Provider)).all()}
        latest, first = _runs(session)
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
