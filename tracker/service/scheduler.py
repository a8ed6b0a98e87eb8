"""``gpu-tracker run``: collect every enabled provider on its own interval, for as long as it runs.

* APScheduler 3 ``BackgroundScheduler`` with its jobs in the same database
  (``SQLAlchemyJobStore``, table ``apscheduler_jobs``, unqualified so PostgreSQL's
  ``search_path`` applies), so a restart keeps each provider's next run time.
* One interval job per provider (``collect:<provider>``), referencing ``collect_job`` by
  its textual reference so the job store can pickle it; the engine and settings live in a
  module-level runtime set by ``SchedulerService`` (they cannot be pickled).
* ``coalesce=True`` (missed runs collapse into one), ``misfire_grace_time`` (default: the
  interval plus jitter, so a restart after downtime catches up once), ``max_instances=1`` and a random
  ``jitter`` (default a tenth of the interval, at most 5 minutes).
* A job new to the store runs within a few seconds of start-up; an existing job whose
  interval did not change keeps its stored next run time.
* After each collection the after-collect hooks run (``tracker.service.hooks``): analysis
  snapshot, alert rules, plugins. A failing hook is logged, never fatal.
* A failed run (not a skipped one) schedules a one-off retry (``retry:<provider>``, a
  ``DateTrigger`` job in the same store, same job function) after ``retry_base`` doubled for
  each failure in a row, at most half the interval; none when it would not land at least half
  its delay before the next regular run. A run that did not fail cancels the pending retry. A
  retry and the regular job never overlap (``Runtime.begin`` admits one batch per provider);
  a retry missed by more than its delay is dropped (misfire grace), and so is one left behind
  a restart when the regular run comes first or is due itself (``reconcile_jobs``).
* Only the leader collects (``tracker.service.leader``: a lease row in the store, every writing
  commit fenced by it); a second ``run`` on the same database is a standby polling the lease a
  few times per interval, and takes over when the leader dies or its lease runs out (frozen).
* A leader that takes over from one that never let go marks that one's ``running`` rows failed
  (``Abandoned``, with the reason); any start marks rows older than the longest a run may take.
* SIGINT/SIGTERM: stop scheduling, let the in-flight provider batches finish for up to
  ``scheduler.shutdown_grace`` seconds, then exit 0. A batch still running after that is
  abandoned: its transaction never commits, and its ``scrape_run`` row is marked failed
  (``Interrupted``). A second signal exits at once (code 128 + signal number).
"""

from __future__ import annotations

import logging
import math
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers import SchedulerNotRunningError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db import reads
from db.engine import engine_reader
from db.models import ScrapeRun
from db.reader import in_transaction
from db.spans import utcnow
from scrapers.base import Scraper
from scrapers.registry import all_scrapers, get_scraper
from tracker.config.settings import Settings
from tracker.errors import ConfigError
from tracker.pipeline import collect as collect_mod
from tracker.pipeline.collect import RunResult, collect
from tracker.pipeline.replay import BUNDLED_RECORDINGS
from tracker.service import leader
from tracker.service.hooks import run_hooks

log = logging.getLogger("tracker.service.scheduler")

JOB_TABLE = "apscheduler_jobs"
JOB_FUNC = "tracker.service.scheduler:collect_job"
JOB_PREFIX = "collect:"
#: The one pending retry of a failed provider: ``retry:<provider>`` (same job function).
RETRY_PREFIX = "retry:"
#: A retry must land at least this fraction of its delay before the next regular run, so it
#: never runs just before (or back to back with) the regular one.
RETRY_MIN_LEAD = 0.5
#: A new job's first run happens within this many seconds of start-up (spread by jitter).
FIRST_RUN_SPREAD_S = 10.0


# --- what to schedule ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProviderPlan:
    """One provider's schedule: seconds between runs, random delay, misfire grace."""

    name: str
    interval: float
    jitter: float
    misfire_grace: int

    @property
    def job_id(self) -> str:
        return JOB_PREFIX + self.name


def provider_interval(settings: Settings, cls: type[Scraper]) -> float:
    """Config ``[providers.X] interval`` > the scraper's own declared non-default
    ``default_interval_s`` > ``default_interval`` (``Settings.interval_for``, the one rule)."""
    return settings.interval_for(cls.name, cls)


def plan_for(settings: Settings, name: str, interval: float) -> ProviderPlan:
    s = settings.scheduler
    jitter = s.jitter if s.jitter is not None else min(300.0, interval / 10)
    # default: a run late by up to one interval (+ jitter) still happens, so a restart catches up once
    grace = s.misfire_grace if s.misfire_grace is not None else interval + jitter
    return ProviderPlan(name, interval, jitter, max(1, math.ceil(grace)))


def plan_providers(
    settings: Settings,
    names: Sequence[str] | None = None,
    *,
    replay: bool = False,
    replay_dir: Path | None = None,
) -> list[ProviderPlan]:
    """Named providers (even disabled ones; a retired one is refused), else every enabled active one;
    with replay, those recorded."""
    if names:
        classes = [get_scraper(n) for n in dict.fromkeys(names)]
        collect_mod.check_active(classes)
    else:
        classes = [cls for name, cls in all_scrapers().items() if settings.provider(name).enabled and cls.retired is None]
        if replay:
            directory = replay_dir or BUNDLED_RECORDINGS
            classes = [c for c in classes if (directory / c.name / "manifest.json").is_file()]
            if not classes:
                raise ConfigError(f"--replay: no recordings of an enabled provider under {directory}")
    if not classes:
        raise ConfigError("providers: every provider is disabled; enable one or pass --provider")
    return [plan_for(settings, c.name, provider_interval(settings, c)) for c in classes]


def clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


# --- retries after a failure --------------------------------------------------------------


def retry_id(provider: str) -> str:
    return RETRY_PREFIX + provider


def retry_delay(retry_base: float, consecutive_failures: int, interval: float) -> float | None:
    """Seconds from a failed run to its retry: ``retry_base * 2**(failures-1)``, at most half the interval.

    None when retries are off (``retry_base`` 0) or nothing failed.
    """
    if retry_base <= 0 or consecutive_failures < 1:
        return None
    return min(retry_base * 2.0 ** min(consecutive_failures - 1, 64), interval / 2)


def cancel_retry(scheduler: BaseScheduler, provider: str) -> bool:
    """Remove the provider's pending retry; False when there was none."""
    try:
        scheduler.remove_job(retry_id(provider))
    except JobLookupError:
        return False
    return True


def schedule_retry(
    scheduler: BaseScheduler,
    plan: ProviderPlan,
    retry_base: float,
    consecutive_failures: int,
    now: datetime | None = None,
) -> datetime | None:
    """After a failed run: (re)place the provider's one retry job; returns its run time.

    None, and any pending retry cancelled, when retries are off or the retry would not land
    at least ``RETRY_MIN_LEAD`` of its delay before the provider's next regular run.
    """
    now = now or datetime.now(UTC)
    delay = retry_delay(retry_base, consecutive_failures, plan.interval)
    if delay is None:
        cancel_retry(scheduler, plan.name)
        return None
    at = now + timedelta(seconds=delay)
    regular = scheduler.get_job(plan.job_id)
    next_regular = regular.next_run_time if regular is not None else None
    if next_regular is not None and at + timedelta(seconds=delay * RETRY_MIN_LEAD) > next_regular:
        cancel_retry(scheduler, plan.name)
        return None
    scheduler.add_job(
        JOB_FUNC, DateTrigger(run_date=at, timezone=UTC), args=[plan.name], id=retry_id(plan.name),
        name=f"retry {plan.name}", replace_existing=True, coalesce=True, max_instances=1,
        # late by more than its own delay (e.g. the scheduler was down): dropped, the regular run follows
        misfire_grace_time=max(1, math.ceil(min(delay, plan.misfire_grace))),
    )
    return at


# --- the job ------------------------------------------------------------------------------


class Runtime:
    """What a job needs and cannot carry through pickling, plus the in-flight bookkeeping."""

    def __init__(self, engine: Engine, settings: Settings, *, replay: bool = False,
                 replay_dir: Path | None = None) -> None:
        self.engine, self.settings = engine, settings
        self.replay, self.replay_dir = replay, replay_dir
        self.accepting = True
        self.inflight: dict[str, datetime] = {}
        #: The running scheduler (to place retries) and each provider's plan; set by the leader.
        self.scheduler: BaseScheduler | None = None
        self.plans: dict[str, ProviderPlan] = {}
        #: "Now" for retry times (tests inject a clock).
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        self._cond = threading.Condition()
        #: Called with each job's results (tests count cycles with it).
        self.on_results: Callable[[list[RunResult]], None] | None = None
        #: Whether this process may collect now (False once its lease lapsed, e.g. it was frozen).
        self.may_write: Callable[[], bool] = lambda: True

    def plan(self, provider: str) -> ProviderPlan:
        known = self.plans.get(provider)
        if known is not None:
            return known
        return plan_for(self.settings, provider, self.settings.interval_for(provider))

    def begin(self, provider: str) -> bool:
        with self._cond:
            if not self.accepting or provider in self.inflight:
                return False
            self.inflight[provider] = utcnow()
            return True

    def end(self, provider: str) -> None:
        with self._cond:
            self.inflight.pop(provider, None)
            self._cond.notify_all()

    def stop_accepting(self) -> None:
        with self._cond:
            self.accepting = False

    def wait_idle(self, timeout: float) -> dict[str, datetime]:
        """Wait until nothing is in flight; returns what still is after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.inflight:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.5))
            return dict(self.inflight)


_runtime: Runtime | None = None


def collect_job(provider: str) -> None:
    """The scheduled job: collect one provider, then run the after-collect hooks."""
    rt = _runtime
    if rt is None:
        log.warning("job for %s ran outside a scheduler; ignored", provider)
        return
    if not rt.may_write():
        log.warning("run of %s skipped: this scheduler's lease lapsed (was it frozen?); another may lead", provider)
        return
    if not rt.begin(provider):
        log.info("scheduler is stopping or %s is already being collected; run skipped", provider)
        return
    try:
        try:
            results = collect(rt.engine, rt.settings, [provider], replay=rt.replay, replay_dir=rt.replay_dir)
        except Exception as exc:  # noqa: BLE001 - e.g. the database is down: log, try next time
            log.error("collection of %s failed outside the provider: %s: %s", provider, type(exc).__name__, exc,
                      exc_info=log.isEnabledFor(logging.DEBUG))
            return
        follow_up(rt, results)
        report = run_hooks(rt.engine, rt.settings, results)
        log.info(cycle_summary(results, report.alerts_sent, next_run(rt.scheduler)))
        if rt.on_results is not None:
            rt.on_results(results)
    finally:
        rt.end(provider)


def next_run(scheduler: BaseScheduler | None) -> datetime | None:
    """When the scheduler runs its next job (a provider or a retry), or None."""
    if scheduler is None:
        return None
    times = [j.next_run_time for j in scheduler.get_jobs() if j.next_run_time is not None]
    return min(times) if times else None


def cycle_summary(results: Sequence[RunResult], alerts_sent: int, next_at: datetime | None) -> str:
    """One logfmt line per collection: ``cycle providers=1 ok=1 failed=0 skipped=0 offers=151
    changed=3 alerts_sent=0 next_run=...`` (the JSON log format lifts the pairs into fields)."""
    count = {s: sum(1 for r in results if r.status == s) for s in ("ok", "partial", "failed", "skipped")}
    nxt = next_at.isoformat(timespec="seconds") if next_at is not None else "none"
    partial = f"partial={count['partial']} " if count["partial"] else ""
    return (f"cycle providers={len(results)} ok={count['ok']} {partial}failed={count['failed']} skipped={count['skipped']} "
            f"offers={sum(r.offers_seen for r in results)} changed={sum(r.prices_changed for r in results)} "
            f"alerts_sent={alerts_sent} next_run={nxt}")


def failures_in_a_row(engine: Engine, provider: str) -> int:
    """Failed runs in a row, as the store counts them (at least 1 right after a failure)."""
    with engine_reader(engine) as reader:
        row = reads.providers(reader).get(provider)
    return max(1, row.consecutive_failures if row is not None else 1)


def follow_up(rt: Runtime, results: Sequence[RunResult]) -> None:
    """Schedule a retry for each failed provider, cancel the pending one of the others."""
    sched = rt.scheduler
    if sched is None:
        return
    base = rt.settings.scheduler.retry_base
    for r in results:
        try:
            if r.status == "failed" and base > 0:
                failures = failures_in_a_row(rt.engine, r.provider)
                at = schedule_retry(sched, rt.plan(r.provider), base, failures, now=rt.clock())
                if at is not None:
                    log.info("retry of %s at %s (failure %d in a row)", r.provider,
                             at.isoformat(timespec="seconds"), failures)
                else:
                    log.info("no early retry of %s: its next regular run comes first", r.provider)
            elif cancel_retry(sched, r.provider):
                log.info("pending retry of %s cancelled (last run %s)", r.provider, r.status)
        except Exception as exc:  # noqa: BLE001 - the regular schedule still stands
            log.warning("could not schedule the retry of %s: %s: %s", r.provider, type(exc).__name__, exc)


def run_once(
    engine: Engine,
    settings: Settings,
    names: Sequence[str] | None = None,
    *,
    replay: bool = False,
    replay_dir: Path | None = None,
) -> list[RunResult]:
    """One full cycle (``run --once``): every planned provider concurrently, then the hooks."""
    plans = plan_providers(settings, names, replay=replay, replay_dir=replay_dir)
    abandon_orphaned_runs(engine, utcnow() - timedelta(seconds=longest_run_s(settings)))
    results = collect(engine, settings, [p.name for p in plans], replay=replay, replay_dir=replay_dir)
    report = run_hooks(engine, settings, results)
    log.info(cycle_summary(results, report.alerts_sent, None))
    return results


def mark_abandoned(engine: Engine, inflight: dict[str, datetime], *, hold_store_lock: bool = True,
                   lock_timeout: float = 5.0) -> int:
    """Mark the ``running`` rows of abandoned batches as failed; returns how many.

    With ``hold_store_lock`` (the exiting process), every turn to write a collection is taken
    first and never given back (``collect.StoreTurns.close``): no batch is half-way through its
    commit, and none can start one before the process exits.
    """
    if not inflight:
        return 0
    if hold_store_lock:
        collect_mod.TURNS.close(lock_timeout)
    since = min(inflight.values()) - timedelta(seconds=1)
    with Session(engine) as session:
        rows = reads.running_runs(in_transaction(session.connection()), providers=list(inflight), started_since=since)
        now = utcnow()
        marked = 0
        for run in rows:  # "still running" in the WHERE: a batch that committed meanwhile stays ok
            result = session.exec(
                update(ScrapeRun)
                .where(col(ScrapeRun.id) == run.id, col(ScrapeRun.status) == "running")
                .values(status="failed", finished_at=now, duration_s=(now - run.started_at).total_seconds(),
                        error_class="Interrupted",
                        error_message="the scheduler stopped before this run finished; none of it was stored")
            )
            marked += result.rowcount  # type: ignore[attr-defined]
        session.commit()
        return marked


#: (first, longest) wait between attempts while the store cannot be written (a full disk).
UNWRITABLE_BACKOFF_S = (1.0, 60.0)

#: What an abandoned run's row says.
ABANDONED = "Abandoned"


def longest_run_s(settings: Settings) -> float:
    """A collection still ``running`` after this long has no live process behind it: the fetch is
    cut at ``http.provider_timeout_s`` (or a provider's own, longer limit) and parsing and
    storing take a fraction of that."""
    from tracker.config.settings import SLOW_DOWNLOAD_BYTES_S

    own = [p.timeout_s for p in settings.providers.values() if p.timeout_s is not None]
    return max([settings.http.provider_timeout_s, (6 << 30) / SLOW_DOWNLOAD_BYTES_S, *own]) + 300.0


def abandon_orphaned_runs(engine: Engine, started_before: datetime, reason: str | None = None) -> int:
    """Mark ``running`` rows started before ``started_before`` as failed (``Abandoned``), with
    the reason: their process was killed or crashed (``kill -9``, power loss) mid-run, so
    their transaction never committed and nothing of them was stored. Returns how many."""
    now = utcnow()
    reason = reason or ("the process collecting it stopped (killed or crashed) before the run finished; "
                        "none of it was stored")
    with Session(engine) as session:
        rows = reads.running_runs(in_transaction(session.connection()), started_before)
        marked = 0
        for run in rows:
            result = session.exec(
                update(ScrapeRun)
                .where(col(ScrapeRun.id) == run.id, col(ScrapeRun.status) == "running")
                .values(status="failed", finished_at=now, duration_s=(now - run.started_at).total_seconds(),
                        error_class=ABANDONED, error_message=reason)
            )
            marked += result.rowcount  # type: ignore[attr-defined]
        session.commit()
    if marked:
        log.warning("marked %d run(s) left 'running' by a stopped process as abandoned", marked)
    return marked


# --- the service --------------------------------------------------------------------------


def reconcile_jobs(scheduler: BackgroundScheduler, plans: Sequence[ProviderPlan], now: datetime | None = None,
                   *, retries: bool = True) -> None:
    """Make the stored jobs match ``plans``; an unchanged job keeps its next run time.

    A stored retry stays only when retries are on, its provider is selected, its time comes
    before the regular run, that regular run is not due itself (it then is the catch-up) and
    the retry was not missed by more than its misfire grace.
    """
    now = now or datetime.now(UTC)
    wanted = {p.job_id: p for p in plans}
    existing = {j.id: j for j in scheduler.get_jobs()}
    for job_id, job in existing.items():
        if job_id.startswith(JOB_PREFIX) and job_id not in wanted:
            scheduler.remove_job(job_id)
            log.info("schedule of %s removed (provider not selected)", job_id[len(JOB_PREFIX):])
    for job_id, p in wanted.items():
        job = existing.get(job_id)
        if job is not None and _unchanged(job, p):
            log.info("schedule of %s kept: every %s, next run %s", p.name, _human(p.interval),
                     job.next_run_time.isoformat() if job.next_run_time else "paused")
            continue
        first = now + timedelta(seconds=random.uniform(0, min(p.jitter, FIRST_RUN_SPREAD_S)))
        scheduler.add_job(
            JOB_FUNC, IntervalTrigger(seconds=p.interval, jitter=p.jitter or None, timezone=UTC),
            args=[p.name], id=job_id, name=f"collect {p.name}", replace_existing=True, next_run_time=first,
            coalesce=True, max_instances=1, misfire_grace_time=p.misfire_grace,
        )
        log.info("schedule of %s: every %s (jitter %s), first run %s", p.name, _human(p.interval),
                 _human(p.jitter), first.isoformat(timespec="seconds"))
    for job_id, job in existing.items():
        if job_id.startswith(RETRY_PREFIX):
            _reconcile_retry(scheduler, job, job_id[len(RETRY_PREFIX):], wanted, now, retries)


def _reconcile_retry(scheduler: BackgroundScheduler, job: Any, name: str, wanted: dict[str, ProviderPlan],
                     now: datetime, retries: bool) -> None:
    regular = scheduler.get_job(JOB_PREFIX + name)
    next_regular = regular.next_run_time if regular is not None else None
    reason = None
    if not retries:
        reason = "retries are off (scheduler.retry_base = 0)"
    elif JOB_PREFIX + name not in wanted:
        reason = "provider not selected"
    elif job.next_run_time is None:
        reason = "no run time"
    elif next_regular is not None and (next_regular <= now or job.next_run_time >= next_regular):
        reason = "the regular run comes first"
    elif job.misfire_grace_time is not None and now - job.next_run_time > timedelta(seconds=job.misfire_grace_time):
        reason = f"missed by {_human(round((now - job.next_run_time).total_seconds()))}"
    if reason is None:
        log.info("retry of %s kept: %s", name, job.next_run_time.isoformat(timespec="seconds"))
        return
    cancel_retry(scheduler, name)
    log.info("pending retry of %s dropped (%s)", name, reason)


def _unchanged(job: Any, p: ProviderPlan) -> bool:
    trigger = job.trigger
    return (
        isinstance(trigger, IntervalTrigger)
        and abs(trigger.interval.total_seconds() - p.interval) < 1e-6
        and (trigger.jitter or 0) == (p.jitter or 0)
        and job.misfire_grace_time == p.misfire_grace
        and job.func_ref == JOB_FUNC
        and list(job.args) == [p.name]
        and job.next_run_time is not None
    )


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


class SchedulerService:
    """Leader election, the APScheduler instance, heartbeats and a clean shutdown."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        plans: Sequence[ProviderPlan],
        *,
        replay: bool = False,
        replay_dir: Path | None = None,
        lock: leader.LeaderLock | None = None,
    ) -> None:
        if not plans:
            raise ConfigError("nothing to schedule: no provider selected")
        self.engine, self.settings, self.plans = engine, settings, list(plans)
        shortest = min(p.interval for p in self.plans)
        self.heartbeat_every = settings.scheduler.heartbeat or clamp(shortest / 2, 1.0, 30.0)
        self.lease = settings.scheduler.lease or leader.default_lease(self.heartbeat_every)
        if self.lease < 2 * self.heartbeat_every:
            raise ConfigError(f"scheduler.lease ({self.lease:g}s) must be at least twice the heartbeat "
                              f"({self.heartbeat_every:g}s), or one late heartbeat loses the lead")
        self.lock = lock or leader.leader_lock(engine, self.lease)
        #: From the first lease until shutdown every commit that writes checks the lease (fencing).
        self._fenced = False
        leader.install_fence(engine, self.lock, lambda: self._fenced)
        self.runtime = Runtime(engine, settings, replay=replay, replay_dir=replay_dir)
        self.runtime.plans = {p.name: p for p in self.plans}
        valid = getattr(self.lock, "valid", None)
        if callable(valid):
            self.runtime.may_write = valid
        #: A standby asks for the lock this often: several times per interval.
        self.standby_poll = clamp(shortest / 4, 0.25, 15.0)
        self.stop_event = threading.Event()
        self.scheduler: BackgroundScheduler | None = None
        self.is_leader = False
        self._signals = 0

    # signals
    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signals += 1
        name = signal.Signals(signum).name
        if self._signals > 1:
            os.write(2, f"{name} again: exiting now without waiting\n".encode())
            os._exit(128 + signum)
        log.info("%s received: shutting down (send it again to exit at once)", name)
        self.stop_event.set()

    def stop(self) -> None:
        self.stop_event.set()

    # leadership
    def _lead(self) -> None:
        self._fenced = True
        leader.record_leader(self.engine, self.heartbeat_every, self.lock.description)
        # a predecessor that never let go (kill -9, frozen) left its in-flight runs 'running'
        took_over = bool(getattr(self.lock, "took_over", False))
        cutoff = utcnow() if took_over else utcnow() - timedelta(seconds=longest_run_s(self.settings))
        abandon_orphaned_runs(self.engine, cutoff, "the scheduler collecting it stopped (killed, crashed or frozen) "
                              "before the run finished; none of it was stored" if took_over else None)
        sched = BackgroundScheduler(
            timezone=UTC,
            jobstores={"default": SQLAlchemyJobStore(engine=self.engine, tablename=JOB_TABLE)},
            executors={"default": ThreadPoolExecutor(max(1, min(len(self.plans), self.settings.http.concurrency)))},
            job_defaults={"coalesce": True, "max_instances": 1},
        )
        sched.start(paused=True)
        try:
            reconcile_jobs(sched, self.plans, retries=self.settings.scheduler.retry_base > 0)
        except Exception:
            sched.shutdown(wait=False)
            raise
        self.runtime.scheduler = sched
        sched.resume()
        self.scheduler, self.is_leader = sched, True
        log.info("leader: collecting %d provider(s) on this database (pid %d, %s)", len(self.plans), os.getpid(),
                 self.lock.description)

    def _step_down(self) -> None:
        self._stop_scheduler()
        self.is_leader = False
        self.lock.release()

    def _stop_scheduler(self) -> None:
        self.runtime.scheduler = None
        if self.scheduler is not None:
            try:
                self.scheduler.shutdown(wait=False)
            except SchedulerNotRunningError:
                pass
            self.scheduler = None

    def run(self) -> int:
        """Block until stopped; returns the exit code (0 for a requested stop)."""
        global _runtime
        _runtime = self.runtime
        announced_standby = False
        blocked: str | None = None  # why the store could not be written, said once
        backoff = UNWRITABLE_BACKOFF_S[0]
        try:
            while not self.stop_event.is_set():
                if not self.is_leader:
                    acquired = self.lock.try_acquire()
                    error = getattr(self.lock, "error", None)
                    if error is not None:
                        # Not a standby: nobody collects while the store cannot be written.
                        if error != blocked:
                            log.error("not collecting: %s; trying again with backoff (at most every %gs)",
                                      error, UNWRITABLE_BACKOFF_S[1])
                            blocked = error
                        self.stop_event.wait(backoff)
                        backoff = min(backoff * 2, UNWRITABLE_BACKOFF_S[1])
                        continue
                    if blocked is not None:
                        log.warning("the store can be used again (before: %s)", blocked)
                        blocked, backoff = None, UNWRITABLE_BACKOFF_S[0]
                    if acquired:
                        try:
                            self._lead()
                        except Exception as exc:  # noqa: BLE001 - e.g. the database is down: retry
                            log.error("could not start scheduling: %s: %s; retrying", type(exc).__name__, exc,
                                      exc_info=log.isEnabledFor(logging.DEBUG))
                            self.lock.release()
                            self.stop_event.wait(max(self.standby_poll, 5.0))
                            continue
                        announced_standby = False
                        continue
                    if not announced_standby:
                        log.info("standby: another scheduler collects on this database (%s); taking over when "
                                 "it stops", self.lock.description)
                        announced_standby = True
                    self.stop_event.wait(self.standby_poll)
                    continue
                if not self.lock.held():
                    log.error("lost the scheduler lock: collection stopped here, back to standby")
                    self._step_down()
                    continue
                try:
                    if not leader.heartbeat(self.engine):
                        leader.record_leader(self.engine, self.heartbeat_every, self.lock.description)
                except Exception as exc:  # noqa: BLE001 - a missed heartbeat is not fatal
                    log.warning("heartbeat not recorded: %s: %s", type(exc).__name__, exc)
                self.stop_event.wait(self.heartbeat_every)
        finally:
            self._shutdown()
        return 0

    def _shutdown(self) -> None:
        global _runtime
        self.runtime.stop_accepting()
        was_leader = self.is_leader
        self._stop_scheduler()
        grace = self.settings.scheduler.shutdown_grace
        pending = self.runtime.wait_idle(grace) if self.runtime.inflight else {}
        if was_leader:
            try:
                leader.record_stopped(self.engine)
            except Exception as exc:  # noqa: BLE001
                log.warning("could not record the scheduler's stop: %s", exc)
        if pending:
            try:
                marked = mark_abandoned(self.engine, pending)
            except leader.LeadershipLost:
                marked = 0  # the next leader marks them
            log.warning("abandoned %s after %ss (%d run row(s) marked Interrupted; nothing half-written)",
                        ", ".join(sorted(pending)), grace, marked)
            self.lock.release()
            logging.shutdown()
            sys.stdout.flush()
            os._exit(0)  # worker threads cannot be interrupted; their transactions die with us
        self.is_leader = False
        self.lock.release()
        self._fenced = False
        _runtime = None
        log.info("scheduler stopped" if was_leader else "standby stopped")
