"""The scheduler in-process: job store reconciliation, the service loop, hooks, locks, status, logs.

Real processes (SIGTERM, standby take-over, kill -9) are in test_run_process.py.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from db.engine import engine_reader, make_engine
from db.models import Provider, ScrapeRun
from db.reader import Reader
from db.spans import utcnow
from tests.conftest import _fresh_postgres_schema
from tracker.cli import app, expand_replay_dir
from tracker.config.settings import Settings
from tracker.logs import JsonFormatter, parse_pairs
from tracker.pipeline.collect import RunResult
from tracker.pipeline.replay import BUNDLED_RECORDINGS
from tracker.service import hooks, leader, scheduler
from tracker.service.scheduler import (
    JOB_FUNC,
    JOB_TABLE,
    ProviderPlan,
    SchedulerService,
    reconcile_jobs,
)
from tracker.service.status import provider_statuses, scheduler_state, stored_jobs

runner = CliRunner()
REPLAY_PROVIDER = "lambda"

def read(what: Callable[[Reader], Any], engine: Engine) -> Any:
    """``what`` of a reader of ``engine``."""
    with engine_reader(engine) as reader:
        return what(reader)


def plan(name: str, interval: float, jitter: float = 0.0) -> ProviderPlan:
    return ProviderPlan(name, interval, jitter, max(1, round(interval)))


def job_scheduler(engine: Engine) -> BackgroundScheduler:
    sched = BackgroundScheduler(timezone=UTC, jobstores={"default": SQLAlchemyJobStore(engine=engine,
                                                                                       tablename=JOB_TABLE)})
    sched.start(paused=True)
    return sched


# --- job store ----------------------------------------------------------------------------


def test_jobs_live_in_the_database_and_survive_a_restart(engine: Engine) -> None:
    sched = job_scheduler(engine)
    reconcile_jobs(sched, [plan("lambda", 3600, 60), plan("vastai", 1800)])
    now = datetime.now(UTC)
    jobs = {j.id: j for j in sched.get_jobs()}
    assert set(jobs) == {"collect:lambda", "collect:vastai"}
    job = jobs["collect:lambda"]
    assert job.func_ref == JOB_FUNC and job.args == ("lambda",)
    assert job.coalesce is True and job.max_instances == 1 and job.misfire_grace_time == 3600
    assert job.trigger.interval == timedelta(hours=1) and job.trigger.jitter == 60
    assert now - timedelta(seconds=5) <= job.next_run_time <= now + timedelta(seconds=scheduler.FIRST_RUN_SPREAD_S + 5)
    later = now + timedelta(minutes=42)
    sched.modify_job("collect:lambda", next_run_time=later)
    sched.shutdown(wait=False)
    # the table is in this store's schema (on PostgreSQL: the search_path of the URL)
    assert inspect(engine).has_table(JOB_TABLE)

    restarted = job_scheduler(engine)
    reconcile_jobs(restarted, [plan("lambda", 3600, 60), plan("vastai", 900)])
    jobs = {j.id: j for j in restarted.get_jobs()}
    assert abs((jobs["collect:lambda"].next_run_time - later).total_seconds()) < 1e-3  # kept
    assert jobs["collect:vastai"].trigger.interval == timedelta(minutes=15)  # interval changed: replaced
    reconcile_jobs(restarted, [plan("vastai", 900)])
    assert [j.id for j in restarted.get_jobs()] == ["collect:vastai"]  # no longer selected: removed
    restarted.shutdown(wait=False)
    assert set(read(stored_jobs, engine)) == {"vastai"}
    assert read(stored_jobs, engine)["vastai"].interval_s == 900


# --- the service loop ---------------------------------------------------------------------


class FakeCollect:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, engine: Engine, settings: Settings, names: list[str], **kwargs: Any) -> list[RunResult]:
        with self.lock:
            self.calls += names
        return [RunResult(n, "ok", utcnow(), 0.01, offers_seen=3) for n in names]


def wait_for(predicate: Any, timeout: float = 15.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def test_service_collects_on_schedule_runs_hooks_and_stops_cleanly(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeCollect()
    monkeypatch.setattr(scheduler, "collect", fake)
    seen: list[list[RunResult]] = []

    def recorder(engine: Engine, settings: Settings, results: list[RunResult]) -> None:
        seen.append(results)

    def broken(engine: Engine, settings: Settings, results: list[RunResult]) -> None:
        raise RuntimeError("alert rule exploded")

    hooks.register(broken)
    hooks.register(recorder)
    try:
        settings = Settings()
        service = SchedulerService(sqlite_engine, settings, [plan("lambda", 1), plan("vastai", 1)])
        thread = threading.Thread(target=service.run, daemon=True)
        with caplog.at_level(logging.INFO):
            thread.start()
            assert wait_for(lambda: fake.calls.count("lambda") >= 2 and fake.calls.count("vastai") >= 2)
            state = scheduler_state(sqlite_engine)
            assert state["active"] and state["pid"] == os.getpid()
            service.stop()
            thread.join(10)
    finally:
        hooks.unregister(broken)
        hooks.unregister(recorder)
    assert not thread.is_alive()
    assert len(seen) >= 4 and all(r[0].provider in ("lambda", "vastai") for r in seen)
    assert "after-collect hook" in caplog.text and "alert rule exploded" in caplog.text
    state = scheduler_state(sqlite_engine)
    assert not state["active"] and state["stopped_at"] is not None
    assert scheduler._runtime is None
    # the lock was let go: another scheduler could lead at once
    lock = leader.leader_lock(sqlite_engine)
    assert lock.try_acquire()
    lock.release()


def test_a_standby_service_waits_for_the_lock(sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCollect()
    monkeypatch.setattr(scheduler, "collect", fake)
    holder = leader.leader_lock(sqlite_engine)
    assert holder.try_acquire()
    service = SchedulerService(sqlite_engine, Settings(), [plan("lambda", 1)])
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        time.sleep(1.5)
        assert not service.is_leader and fake.calls == []
        holder.release()
        assert wait_for(lambda: fake.calls.count("lambda") >= 1, timeout=10)
        assert service.is_leader
    finally:
        service.stop()
        thread.join(10)
    assert not thread.is_alive()


# --- locks and the leader row -------------------------------------------------------------


def test_only_one_holder_of_the_lock_per_store(engine: Engine, db_url: str) -> None:
    first, second = leader.leader_lock(engine), leader.leader_lock(make_engine(db_url))
    try:
        assert first.try_acquire() and first.held()
        assert not second.try_acquire()
        first.release()
        assert second.try_acquire() and second.held()
        assert not first.try_acquire()
    finally:
        first.release()
        second.release()


def test_stores_in_other_schemas_have_their_own_lock(engine: Engine, db_url: str) -> None:
    if engine.url.get_backend_name() != "postgresql":
        pytest.skip("schemas are a PostgreSQL matter; SQLite locks are per file")
    from tests.conftest import postgres_url

    other_url, drop = _fresh_postgres_schema(postgres_url() or "")
    other = make_engine(other_url)
    a, b = leader.leader_lock(engine), leader.leader_lock(other)
    try:
        assert a.try_acquire() and b.try_acquire()
    finally:
        a.release()
        b.release()
        other.dispose()
        drop()


def test_leader_row_tells_who_is_active(engine: Engine) -> None:
    assert leader.read_leader(engine) is None
    assert scheduler_state(engine)["active"] is False
    since = leader.record_leader(engine, heartbeat_every_s=5, lock_description="test")
    info = leader.read_leader(engine)
    assert info is not None and info.pid == os.getpid() and info.since == since and info.active()
    assert not info.active(now=utcnow() + timedelta(seconds=20))  # two missed heartbeats (+ slack)
    assert leader.heartbeat(engine)
    assert leader.read_leader(engine).heartbeat_at > since  # type: ignore[union-attr]
    leader.record_stopped(engine)
    assert not leader.read_leader(engine).active()  # type: ignore[union-attr]


def test_a_dead_process_on_this_host_is_not_active(sqlite_engine: Engine) -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(proc.stdout)
    leader.record_leader(sqlite_engine, heartbeat_every_s=60)
    with sqlite_engine.begin() as conn:
        conn.execute(leader.leader_table.update().values(pid=dead_pid))
    assert not leader.read_leader(sqlite_engine).active()  # type: ignore[union-attr]


# --- status ---------------------------------------------------------------------------------


def add_runs(engine: Engine, provider: str, *runs: tuple[float, str], failures: int = 0,
             success_hours_ago: float | None = None) -> None:
    now = utcnow()
    with Session(engine) as session:
        session.add(Provider(name=provider, display_name=provider, consecutive_failures=failures,
                             last_success_at=now - timedelta(hours=success_hours_ago) if success_hours_ago is not None else None))
        for hours_ago, status in runs:
            error = ("FetchError", "HTTP 503") if status == "failed" else (None, None)
            session.add(ScrapeRun(provider=provider, started_at=now - timedelta(hours=hours_ago), status=status,
                                  error_class=error[0], error_message=error[1]))
        session.commit()


def test_status_flags_providers_without_success_in_three_intervals(engine: Engine) -> None:
    add_runs(engine, "lambda", (4.5, "ok"), (3.5, "failed"), (2.5, "failed"), (1.5, "failed"), (0.5, "failed"),
             failures=4, success_hours_ago=4.5)
    add_runs(engine, "vastai", (2, "failed"), (0.5, "ok"), success_hours_ago=0.5)
    add_runs(engine, "runpod", (5, "failed"), (0.2, "failed"), failures=2)  # never succeeded, for 5h
    add_runs(engine, "gcp", (9, "skipped"))  # no key: skipped, not stale
    add_runs(engine, "modal", (0.1, "failed"), failures=1)  # failing since minutes: not yet stale
    sched = job_scheduler(engine)
    reconcile_jobs(sched, [plan("lambda", 3600)])
    sched.shutdown(wait=False)
    rows = {r.provider: r for r in provider_statuses(engine, Settings())}
    assert rows["lambda"].stale and rows["lambda"].consecutive_failures == 4
    assert rows["lambda"].last_status == "failed" and rows["lambda"].last_error == "FetchError: HTTP 503"
    assert rows["lambda"].scheduled and rows["lambda"].next_run is not None
    assert not rows["vastai"].stale and rows["vastai"].last_status == "ok" and rows["vastai"].next_run is None
    assert rows["runpod"].stale
    assert not rows["gcp"].stale and rows["gcp"].last_status == "skipped"
    assert not rows["modal"].stale
    # a longer interval moves the line: with 2h, lambda's 4.5h is within three intervals
    longer = Settings(default_interval=7200)
    sched = job_scheduler(engine)
    reconcile_jobs(sched, [plan("lambda", 7200)])
    sched.shutdown(wait=False)
    assert not {r.provider: r for r in provider_statuses(engine, longer)}["lambda"].stale


def test_status_command_json(engine: Engine, db_url: str) -> None:
    add_runs(engine, "lambda", (0.5, "ok"), success_hours_ago=0.5)
    leader.record_leader(engine, heartbeat_every_s=30)
    result = runner.invoke(app, ["--db", db_url, "status", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scheduler"]["active"] is True and data["scheduler"]["pid"] == os.getpid()
    lam = next(p for p in data["providers"] if p["provider"] == "lambda")
    assert lam["last_status"] == "ok" and lam["stale"] is False
    table = runner.invoke(app, ["--db", db_url, "status"])
    assert table.exit_code == 0 and "scheduler: active since" in table.output


# --- run --once, hooks, abandoned runs ------------------------------------------------------


def replay_dir(tmp_path: Path, broken: bool = False) -> Path:
    target = tmp_path / "rec" / REPLAY_PROVIDER
    shutil.copytree(BUNDLED_RECORDINGS / REPLAY_PROVIDER, target)
    if broken:
        for body in target.iterdir():
            if body.name != "manifest.json":
                body.write_text("<html><body>we moved</body></html>")
    return tmp_path / "rec"


def test_run_once_collects_every_selected_provider_and_runs_the_hooks(tmp_path: Path) -> None:
    seen: list[list[RunResult]] = []

    def recorder(engine: Engine, settings: Settings, results: list[RunResult]) -> None:
        seen.append(results)

    hooks.register(recorder)
    try:
        db = f"sqlite:///{tmp_path / 'o.db'}"
        args = expand_replay_dir(["--db", db, "run", "--once", "--replay", str(replay_dir(tmp_path)), "-f", "json"])
        result = runner.invoke(app, args)
    finally:
        hooks.unregister(recorder)
    assert result.exit_code == 0, result.output
    assert [r.provider for r in seen[0]] == [REPLAY_PROVIDER] and seen[0][0].ok
    eng = make_engine(db)
    with Session(eng) as session:
        runs = session.exec(select(ScrapeRun)).all()
    eng.dispose()
    assert [(r.provider, r.status, r.source == "replay") for r in runs] == [(REPLAY_PROVIDER, "ok", True)]


def test_run_once_exits_1_when_a_provider_failed(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'f.db'}"
    proc = subprocess.run(
        [sys.executable, "-m", "tracker", "--db", db, "run", "--once", "--replay", str(replay_dir(tmp_path, broken=True)),
         "--log-format", "json", "-f", "json"],
        capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    [summary] = json.loads(proc.stdout)
    assert summary["status"] == "failed" and "ParseError" in summary["error"]
    line = next(json.loads(x) for x in proc.stderr.splitlines() if '"event": "scrape"' in x)
    assert line["provider"] == REPLAY_PROVIDER and line["status"] == "failed" and line["error"].startswith("ParseError")


def test_builtin_hooks_are_optional_and_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "hook_ok.py").write_text("calls = []\ndef after_collect(engine, settings, results):\n"
                                         "    calls.append(len(results))\n")
    (tmp_path / "hook_broken_import.py").write_text("import no_such_dependency_xyz\n")
    (tmp_path / "hook_raises.py").write_text("def after_collect(engine, settings, results):\n    raise ValueError('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = ("hook_missing_entirely", "hook_broken_import", "hook_raises", "hook_ok")
    with caplog.at_level(logging.INFO):
        failures = hooks.run_after_collect(None, Settings(), [RunResult("x", "ok", utcnow(), 0.1)],  # type: ignore[arg-type]
                                           builtin_modules=modules)
    import hook_ok  # type: ignore[import-not-found]

    assert hook_ok.calls == [1]
    assert [name for name, _ in failures] == ["hook_raises.after_collect"]
    assert "hook_broken_import.after_collect could not be loaded" in caplog.text
    assert "hook_missing_entirely" not in caplog.text


def test_abandoned_runs_are_marked_not_left_running(sqlite_engine: Engine) -> None:
    now = utcnow()
    with Session(sqlite_engine) as session:
        session.add(Provider(name="lambda", display_name="Lambda"))
        session.add(ScrapeRun(provider="lambda", started_at=now, status="running"))
        session.add(ScrapeRun(provider="lambda", started_at=now - timedelta(hours=1), status="ok"))
        session.add(ScrapeRun(provider="vastai", started_at=now, status="running"))  # e.g. a manual scrape
        session.commit()
    assert scheduler.mark_abandoned(sqlite_engine, {"lambda": now}, hold_store_lock=False) == 1
    with Session(sqlite_engine) as session:
        rows = {(r.provider, r.status, r.error_class) for r in session.exec(select(ScrapeRun)).all()}
    assert rows == {("lambda", "failed", "Interrupted"), ("lambda", "ok", None), ("vastai", "running", None)}


# --- logs -----------------------------------------------------------------------------------


def test_scrape_lines_become_json_fields() -> None:
    ok = parse_pairs("scrape provider=vastai status=ok offers=412 new=2 changed=3 quarantined=0 unmapped=1 "
                     "duration=1.25s")
    assert ok == {"event": "scrape", "provider": "vastai", "status": "ok", "offers": 412, "new": 2, "changed": 3,
                  "quarantined": 0, "unmapped": 1, "duration_s": 1.25}
    failed = parse_pairs("scrape provider=aws status=failed duration=0.50s error=FetchError: HTTP 503 from x=1 y")
    assert failed["error"] == "FetchError: HTTP 503 from x=1 y" and failed["duration_s"] == 0.5
    skipped = parse_pairs("scrape provider=gcp status=skipped reason=gcp: set GCP_API_KEY to enable")
    assert skipped["reason"] == "gcp: set GCP_API_KEY to enable"
    assert parse_pairs("plain message") == {}
    record = logging.LogRecord("tracker.pipeline.collect", logging.INFO, __file__, 1, "scrape provider=%s status=%s",
                               ("lambda", "ok"), None)
    record.fields = {"cycle": 3}
    data = json.loads(JsonFormatter().format(record))
    assert data["provider"] == "lambda" and data["cycle"] == 3 and data["level"] == "INFO"
    assert data["message"] == "scrape provider=lambda status=ok"
