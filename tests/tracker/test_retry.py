"""Early retries of a failed provider: backoff, one pending retry per provider, never past the regular run.

The job store is real (SQLite, and PostgreSQL when configured); the provider is a fake
scraper behind ``httpx.MockTransport`` collected by the real pipeline, so the store's
``consecutive_failures`` drives the backoff. Retry times come from an injected clock.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.date import DateTrigger
from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from db.engine import engine_reader
from db.models import Provider
from db.reader import Reader
from db.spans import utcnow
from tests.fakes import make_fake, offers_payload, routing_transport
from tracker.cli import app
from tracker.config.settings import Settings
from tracker.pipeline.collect import RunResult
from tracker.pipeline.collect import collect as real_collect
from tracker.service import hooks, scheduler
from tracker.service.scheduler import (
    JOB_FUNC,
    JOB_TABLE,
    ProviderPlan,
    Runtime,
    SchedulerService,
    reconcile_jobs,
    retry_delay,
    schedule_retry,
)
from tracker.service.status import provider_statuses, stored_jobs, stored_retries

runner = CliRunner()
H100 = {"sku": "h100x1", "gpu": "H100 SXM", "count": 1, "price": 2.50}
HOUR = 3600.0

def read(what: Callable[[Reader], Any], engine: Engine) -> Any:
    """``what`` of a reader of ``engine``."""
    with engine_reader(engine) as reader:
        return what(reader)


def plan(name: str, interval: float = HOUR) -> ProviderPlan:
    return ProviderPlan(name, interval, 0.0, max(1, round(interval)))


def settings(**sched: Any) -> Settings:
    return Settings(http={"timeout_s": 2, "retries": 0, "backoff_s": 0}, scheduler=sched)


def job_scheduler(engine: Engine) -> BackgroundScheduler:
    sched = BackgroundScheduler(timezone=UTC, jobstores={"default": SQLAlchemyJobStore(engine=engine,
                                                                                       tablename=JOB_TABLE)})
    sched.start(paused=True)
    return sched


def seconds_between(a: datetime | None, b: datetime) -> float:
    assert a is not None
    return (a - b).total_seconds()


class FlakyProvider:
    """A fake provider: HTTP 500 while ``failing``, one offer otherwise; collected by the real pipeline."""

    def __init__(self, name: str, credentials: tuple[str, ...] = ()) -> None:
        self.cls = make_fake(name, credentials)
        self.name = name
        self.failing = True
        self.requests = 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.failing:
            return httpx.Response(500, text="upstream exploded")
        return httpx.Response(200, json=offers_payload(H100))

    def collect(self, engine: Engine, settings: Settings, names: list[str], **_: Any) -> list[RunResult]:
        assert names == [self.name]
        return real_collect(engine, settings, classes=[self.cls], environ={},
                            transport_factory=routing_transport({self.name: self.handler}))


class Harness:
    """A paused scheduler on the test database, the runtime the job sees, and a fixed clock."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch, provider: FlakyProvider,
                 config: Settings, interval: float = HOUR) -> None:
        self.engine, self.provider = engine, provider
        self.now = datetime.now(UTC).replace(microsecond=0)
        self.plan = plan(provider.name, interval)
        self.sched = job_scheduler(engine)
        reconcile_jobs(self.sched, [self.plan])
        self.set_next_regular(self.now + timedelta(seconds=interval))  # as if the regular run just started
        self.rt = Runtime(engine, config)
        self.rt.scheduler, self.rt.plans, self.rt.clock = self.sched, {provider.name: self.plan}, lambda: self.now
        monkeypatch.setattr(scheduler, "_runtime", self.rt)
        monkeypatch.setattr(scheduler, "collect", provider.collect)

    def close(self) -> None:
        if self.sched.running:
            self.sched.shutdown(wait=False)

    def set_next_regular(self, when: datetime) -> None:
        self.sched.modify_job(self.plan.job_id, next_run_time=when)

    def run(self) -> None:
        """What the regular job and the retry job both execute."""
        scheduler.collect_job(self.provider.name)

    def job_ids(self) -> set[str]:
        return {j.id for j in self.sched.get_jobs()}

    def retry_at(self) -> datetime | None:
        job = self.sched.get_job("retry:" + self.provider.name)
        return job.next_run_time if job is not None else None

    def failures(self) -> int:
        with Session(self.engine) as session:
            row = session.get(Provider, self.provider.name)
            return row.consecutive_failures if row else 0


@pytest.fixture
def harness(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    h = Harness(engine, monkeypatch, FlakyProvider("flaky"), settings())
    try:
        yield h
    finally:
        h.close()


# --- the arithmetic -------------------------------------------------------------------------


@pytest.mark.parametrize(("base", "failures", "interval", "expected"), [
    (300, 1, HOUR, 300),
    (300, 2, HOUR, 600),
    (300, 3, HOUR, 1200),
    (300, 4, HOUR, 1800),      # 2400 capped at half the interval
    (300, 12, HOUR, 1800),
    (300, 5, 86400, 4800),     # a daily provider (AWS) backs off further
    (300, 9, 86400, 43200),    # 76800 capped at 12 h
    (300, 5000, 86400, 43200),  # no overflow after a very long outage
    (60, 1, 100, 50),          # base larger than half the interval: the cap wins at once
    (0, 3, HOUR, None),        # retries off
    (300, 0, HOUR, None),      # nothing failed
])
def test_backoff_doubles_from_the_base_up_to_half_the_interval(base: float, failures: int, interval: float,
                                                               expected: float | None) -> None:
    assert retry_delay(base, failures, interval) == expected


def test_retry_base_is_a_duration_setting_and_0_disables() -> None:
    assert Settings().scheduler.retry_base == 300
    assert Settings(scheduler={"retry_base": "90s"}).scheduler.retry_base == 90
    assert Settings(scheduler={"retry_base": "0"}).scheduler.retry_base == 0
    with pytest.raises(ValueError):
        Settings(scheduler={"retry_base": "soon"})


# --- failing, retrying, recovering ----------------------------------------------------------


def test_a_failure_schedules_one_retry_and_a_success_cancels_it(harness: Harness) -> None:
    h = harness
    seen: list[list[RunResult]] = []

    def recorder(engine: Engine, settings: Settings, results: list[RunResult]) -> None:
        seen.append(results)

    hooks.register(recorder)
    try:
        h.run()
        assert h.failures() == 1 and h.provider.requests == 1
        assert seconds_between(h.retry_at(), h.now) == pytest.approx(300, abs=1e-3)
        job = h.sched.get_job("retry:flaky")
        # the same job function as the regular run (same collect path, same hooks), one instance
        assert job.func_ref == JOB_FUNC and job.args == ("flaky",) and isinstance(job.trigger, DateTrigger)
        assert job.max_instances == 1 and job.coalesce is True and job.misfire_grace_time == 300
        assert h.job_ids() == {"collect:flaky", "retry:flaky"}

        expected = {2: 600, 3: 1200, 4: 1800, 5: 1800, 6: 1800}  # doubling, then capped at interval/2
        for failures, delay in expected.items():
            h.run()
            assert h.failures() == failures
            assert seconds_between(h.retry_at(), h.now) == pytest.approx(delay, abs=1e-3)
            assert h.job_ids() == {"collect:flaky", "retry:flaky"}  # replaced, never piled up
        assert seconds_between(read(stored_retries, h.engine)["flaky"], h.now) == pytest.approx(1800, abs=1e-3)
        [row] = [r for r in provider_statuses(h.engine, Settings()) if r.provider == "flaky"]
        assert row.retry_at is not None and seconds_between(row.retry_at, h.now) == pytest.approx(1800, abs=1e-3)
        assert set(read(stored_jobs, h.engine)) == {"flaky"}  # the retry is not a second schedule

        h.provider.failing = False
        h.run()
        assert h.failures() == 0 and h.retry_at() is None
        assert h.job_ids() == {"collect:flaky"}
        assert read(stored_retries, h.engine) == {}
    finally:
        hooks.unregister(recorder)
    # the after-collect hooks (alerts) ran after every run, retries included
    assert [r[0].status for r in seen] == ["failed"] * 6 + ["ok"]


def test_a_retry_never_lands_after_the_next_regular_run(harness: Harness) -> None:
    h = harness
    h.set_next_regular(h.now + timedelta(minutes=20))
    h.run()  # 1st failure: 5 min, well before the regular run in 20
    assert seconds_between(h.retry_at(), h.now) == pytest.approx(300, abs=1e-3)
    h.run()  # 2nd: 10 min, still at least half its delay before the regular run
    assert seconds_between(h.retry_at(), h.now) == pytest.approx(600, abs=1e-3)
    h.run()  # 3rd: 20 min would meet the regular run: none, and the pending one is cancelled
    assert h.retry_at() is None and h.job_ids() == {"collect:flaky"}
    h.run()
    assert h.retry_at() is None and h.job_ids() == {"collect:flaky"}

    # whatever the failures and the distance to the regular run, a retry comes before it
    for minutes in (1, 4, 7, 9, 15, 29, 31, 45, 60):
        regular = h.now + timedelta(minutes=minutes)
        h.set_next_regular(regular)
        for failures in range(1, 9):
            at = schedule_retry(h.sched, h.plan, 300, failures, now=h.now)
            delay = retry_delay(300, failures, HOUR)
            assert delay is not None and delay <= HOUR / 2
            if at is None:
                assert h.retry_at() is None
            else:
                assert at < regular and h.now + timedelta(seconds=delay) == at
            assert len(h.job_ids()) <= 2


def test_a_daily_provider_is_retried_within_half_a_day(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(engine, monkeypatch, FlakyProvider("daily"), settings(), interval=86400)
    try:
        for failures, delay in ((1, 300), (2, 600), (9, 43200)):
            at = schedule_retry(h.sched, h.plan, 300, failures, now=h.now)
            assert at is not None and seconds_between(at, h.now) == delay
    finally:
        h.close()


def test_retry_base_0_disables_retries(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(engine, monkeypatch, FlakyProvider("noretry"), settings(retry_base="0s"))
    try:
        assert schedule_retry(h.sched, h.plan, 300, 1, now=h.now) is not None  # left from an earlier config
        h.run()
        assert h.failures() == 1 and h.retry_at() is None and h.job_ids() == {"collect:noretry"}
        # and a restart with retries off drops a stored one
        schedule_retry(h.sched, h.plan, 300, 1, now=h.now)
        reconcile_jobs(h.sched, [h.plan], retries=False)
        assert h.job_ids() == {"collect:noretry"}
    finally:
        h.close()


def test_a_skipped_provider_is_not_retried(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(engine, monkeypatch, FlakyProvider("locked", ("LOCKED_RETRY_KEY",)), settings())
    try:
        schedule_retry(h.sched, h.plan, 300, 1, now=h.now)
        h.run()  # no key: skipped, and the pending retry is gone (retrying cannot help)
        assert h.provider.requests == 0 and h.retry_at() is None and h.job_ids() == {"collect:locked"}
    finally:
        h.close()


def test_a_retry_and_the_regular_run_never_overlap(harness: Harness) -> None:
    h = harness
    assert h.rt.begin("flaky")  # e.g. the regular run is in flight
    try:
        h.run()  # the retry job (same function) finds it busy and does nothing
        assert h.provider.requests == 0 and h.retry_at() is None
    finally:
        h.rt.end("flaky")
    h.run()
    assert h.provider.requests == 1 and h.retry_at() is not None


# --- restarts -------------------------------------------------------------------------------


def test_a_pending_retry_survives_a_restart_unless_the_regular_run_comes_first(
    harness: Harness, engine: Engine
) -> None:
    h = harness
    h.run()
    at = h.retry_at()
    assert at is not None
    h.sched.shutdown(wait=False)

    restarted = job_scheduler(engine)
    try:
        reconcile_jobs(restarted, [h.plan])
        job = restarted.get_job("retry:flaky")
        assert job is not None and abs((job.next_run_time - at).total_seconds()) < 1e-3
        assert {j.id for j in restarted.get_jobs()} == {"collect:flaky", "retry:flaky"}
        # a retry missed by more than its grace (its delay) is dropped at start-up
        reconcile_jobs(restarted, [h.plan], now=at + timedelta(seconds=301))
        assert {j.id for j in restarted.get_jobs()} == {"collect:flaky"}
        assert schedule_retry(restarted, h.plan, 300, 1) is not None
        # the regular run is overdue (the scheduler was down): it is the catch-up, the retry goes
        restarted.modify_job("collect:flaky", next_run_time=utcnow() - timedelta(minutes=1))
        reconcile_jobs(restarted, [h.plan])
        assert {j.id for j in restarted.get_jobs()} == {"collect:flaky"}
        # a changed interval restarts the schedule within seconds: a later retry is dropped
        restarted.modify_job("collect:flaky", next_run_time=utcnow() + timedelta(hours=1))
        assert schedule_retry(restarted, h.plan, 300, 1) is not None
        reconcile_jobs(restarted, [plan("flaky", 7200)])
        assert {j.id for j in restarted.get_jobs()} == {"collect:flaky"}
        # a provider no longer selected loses its retry with its schedule
        restarted.modify_job("collect:flaky", next_run_time=utcnow() + timedelta(hours=2))
        assert schedule_retry(restarted, plan("flaky", 7200), 300, 1) is not None
        reconcile_jobs(restarted, [plan("other")])
        assert {j.id for j in restarted.get_jobs()} == {"collect:other"}
    finally:
        restarted.shutdown(wait=False)


def test_a_stale_retry_is_dropped_by_misfire_grace(sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(scheduler, "collect", lambda engine, settings, names, **kw: calls.extend(names) or [])
    monkeypatch.setattr(scheduler, "_runtime", Runtime(sqlite_engine, Settings()))
    sched = job_scheduler(sqlite_engine)
    try:
        p = plan("stale")
        reconcile_jobs(sched, [p])
        sched.modify_job(p.job_id, next_run_time=utcnow() + timedelta(hours=1))
        # the retry was due 55 minutes ago (the machine slept): 5 minutes of grace are long gone
        assert schedule_retry(sched, p, 300, 1, now=utcnow() - timedelta(hours=1)) is not None
        sched.resume()
        assert wait_for(lambda: sched.get_job("retry:stale") is None)
        time.sleep(0.2)
        assert calls == []
        assert {j.id for j in sched.get_jobs()} == {"collect:stale"}
    finally:
        sched.shutdown(wait=False)


# --- the service and status ------------------------------------------------------------------


def wait_for(predicate: Any, timeout: float = 15.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def test_the_service_retries_a_failing_provider_without_overlap_or_pile_up(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = threading.Lock()
    state = {"running": 0, "max_running": 0, "calls": 0}

    def failing(engine: Engine, settings: Settings, names: list[str], **kwargs: Any) -> list[RunResult]:
        with lock:
            state["running"] += 1
            state["calls"] += 1
            state["max_running"] = max(state["max_running"], state["running"])
        time.sleep(0.05)
        with lock:
            state["running"] -= 1
        return [RunResult(n, "failed", utcnow(), 0.05, error_class="FetchError", error_message="HTTP 500")
                for n in names]

    monkeypatch.setattr(scheduler, "collect", failing)
    job_counts: list[int] = []
    # an hourly provider: without retries it would run once in this test
    service = SchedulerService(sqlite_engine, settings(retry_base=0.2), [plan("lambda", HOUR)])
    rt = service.runtime
    rt.on_results = lambda results: job_counts.append(len(rt.scheduler.get_jobs()) if rt.scheduler else 0)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: state["calls"] >= 4)
    finally:
        service.stop()
        thread.join(10)
    assert not thread.is_alive()
    assert state["max_running"] == 1
    assert job_counts and max(job_counts) == 2  # one regular job and at most one retry, ever
    assert set(read(stored_jobs, sqlite_engine)) == {"lambda"}


def test_status_shows_a_pending_retry(engine: Engine, db_url: str) -> None:
    sched = job_scheduler(engine)
    try:
        p = plan("lambda")
        reconcile_jobs(sched, [p])
        sched.modify_job(p.job_id, next_run_time=utcnow() + timedelta(hours=1))
        at = schedule_retry(sched, p, 300, 1)
    finally:
        sched.shutdown(wait=False)
    assert at is not None
    result = runner.invoke(app, ["--db", db_url, "status", "--format", "json"])
    assert result.exit_code == 0, result.output
    lam = next(r for r in json.loads(result.stdout)["providers"] if r["provider"] == "lambda")
    assert abs(datetime.fromisoformat(lam["retry_at"]).timestamp() - at.timestamp()) < 1e-3
    others = [r for r in json.loads(result.stdout)["providers"] if r["provider"] != "lambda"]
    assert all(r["retry_at"] is None for r in others)
    table = runner.invoke(app, ["--db", db_url, "status"], env={"COLUMNS": "240"})
    assert table.exit_code == 0, table.output
    header = next(line for line in table.output.splitlines() if "next run" in line)
    assert "retry" in header
    line = next(line for line in table.output.splitlines() if line.strip("│┃ ").startswith("lambda"))
    assert "in 5.0m" in line or "in 4.9m" in line, line
