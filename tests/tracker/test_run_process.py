"""`gpu-tracker run` as real processes: cycles on a short interval, SIGTERM, standby take-over, kill -9.

Every process collects a copy of the bundled ``lambda`` recording (``run --replay DIR``) on
an interval of two seconds. The store is read from the test process while they run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from db import reads
from db.models import Offer, ScrapeRun
from db.reader import in_transaction
from db.spans import utcnow
from tracker.pipeline.replay import BUNDLED_RECORDINGS
from tracker.service import leader

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
PROVIDER = "lambda"
INTERVAL = 2.0

#: Runs the CLI with the lambda scraper's parse slowed down (to have a batch in flight).
SLOW_MAIN = textwrap.dedent("""
    import os, sys, time
    from scrapers.lambda_ import LambdaScraper
    original = LambdaScraper.parse
    def slow(self, raw):
        open(os.environ["TEST_PARSE_STARTED"], "w").close()
        time.sleep(float(os.environ["TEST_PARSE_SLEEP"]))
        return original(self, raw)
    LambdaScraper.parse = slow
    from tracker.cli import main
    main()
""")


class Proc:
    def __init__(self, popen: subprocess.Popen[bytes], log: Path, handle: IO[bytes]) -> None:
        self.popen, self.log, self._handle = popen, log, handle

    @property
    def pid(self) -> int:
        return self.popen.pid

    def lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines() if line.startswith("{")]

    def scrape_lines(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r.get("event") == "scrape"]

    def logged(self, text: str) -> bool:
        return any(text in line for line in self.lines())

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        self.popen.send_signal(sig)
        return self.popen.wait(timeout)

    def close(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)
        self._handle.close()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., Proc]]:
    rec = tmp_path / "rec"
    shutil.copytree(BUNDLED_RECORDINGS / PROVIDER, rec / PROVIDER)
    procs: list[Proc] = []

    def start(db_url: str, name: str, *, config: str = "", slow_parse: float | None = None) -> Proc:
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(f'[providers.{PROVIDER}]\ninterval = "{INTERVAL}s"\n[scheduler]\njitter = "0.2s"\n{config}')
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TRACKER_")}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        args = ["--config", str(cfg), "--db", db_url, "run", "--replay", str(rec), "--log-format", "json"]
        if slow_parse is None:
            cmd = [sys.executable, "-m", "tracker", *args]
        else:
            env["TEST_PARSE_SLEEP"] = str(slow_parse)
            env["TEST_PARSE_STARTED"] = str(tmp_path / f"{name}.parsing")
            cmd = [sys.executable, "-c", SLOW_MAIN, *args]
        log = tmp_path / f"{name}.log"
        handle = log.open("wb")
        proc = Proc(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT), log, handle)
        procs.append(proc)
        return proc

    yield start
    for p in procs:
        p.close()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, procs: tuple[Proc, ...] = ()) -> float:
    """Poll until true; returns the time it took (fails with the processes' logs)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return time.monotonic() - t0
        time.sleep(0.05)
    logs = "\n".join(f"--- pid {p.pid}:\n" + "\n".join(p.lines()[-15:]) for p in procs)
    pytest.fail(f"timed out after {timeout}s waiting for {what}\n{logs}")


def runs(engine: Engine, status: str | None = None, after: datetime | None = None) -> list[ScrapeRun]:
    with Session(engine) as session:
        stmt = select(ScrapeRun).order_by(ScrapeRun.id)
        if status:
            stmt = stmt.where(ScrapeRun.status == status)
        if after:
            stmt = stmt.where(ScrapeRun.started_at > after)
        return list(session.exec(stmt).all())


def leader_pid(engine: Engine) -> int | None:
    try:
        info = leader.read_leader(engine)
    except Exception:  # noqa: BLE001 - table being created by the subprocess
        return None
    return info.pid if info and info.stopped_at is None else None


def test_run_collects_every_interval_and_stops_cleanly_on_sigterm(
    engine: Engine, db_url: str, spawn: Callable[..., Proc]
) -> None:
    proc = spawn(db_url, "a")
    wait_for(lambda: len(runs(engine, "ok")) >= 2, 30, "two collection cycles", (proc,))
    assert proc.stop(signal.SIGTERM) == 0
    done = runs(engine)
    assert len(done) >= 2 and {r.status for r in done} == {"ok"}  # nothing left half-way
    assert all(r.provider == PROVIDER and r.source == "replay" and r.finished_at for r in done)
    starts = [r.started_at for r in done]
    assert all((b - a).total_seconds() >= INTERVAL * 0.8 for a, b in zip(starts, starts[1:], strict=False))
    with Session(engine) as session:
        offers = session.exec(select(func.count()).select_from(Offer)).one()
        intervals = reads.interval_rows(in_transaction(session.connection()))
    assert offers == done[0].offers_seen > 0
    assert len(intervals) == offers and all(i.observations == len(done) for i in intervals)  # extended, not re-opened
    # one JSON log line per scrape, with the fields a shipper filters on
    lines = proc.scrape_lines()
    assert len(lines) == len(done)
    assert {(x["provider"], x["status"]) for x in lines} == {(PROVIDER, "ok")}
    assert {"offers", "changed", "duration_s"} <= set(lines[0])
    assert proc.logged("SIGTERM received") and proc.logged("scheduler stopped")
    info = leader.read_leader(engine)
    assert info is not None and info.pid == proc.pid and info.stopped_at is not None

    # a restart keeps the stored schedule instead of starting over
    again = spawn(db_url, "b")
    wait_for(lambda: again.logged("schedule of lambda kept"), 20, "the restart to load the stored job", (again,))
    assert again.stop(signal.SIGINT) == 0


def test_second_scheduler_is_a_standby_and_takes_over_after_kill_9(
    engine: Engine, db_url: str, spawn: Callable[..., Proc]
) -> None:
    a = spawn(db_url, "a")
    wait_for(lambda: leader_pid(engine) == a.pid and runs(engine, "ok"), 30, "A to lead and collect", (a,))
    b = spawn(db_url, "b")
    wait_for(lambda: b.logged("standby: another scheduler collects"), 30, "B to wait as a standby", (a, b))
    n = len(runs(engine, "ok"))
    wait_for(lambda: len(runs(engine, "ok")) >= n + 2, 20, "A to go on collecting", (a, b))
    assert leader_pid(engine) == a.pid
    # only A collects: B logs no scrape, and every run row but one A may still have in flight has A's line
    rows, lines = len(runs(engine)), len(a.scrape_lines())
    assert b.scrape_lines() == [] and rows - 1 <= lines <= rows, (rows, lines)

    killed_at = utcnow()
    a.popen.send_signal(signal.SIGKILL)
    a.popen.wait(10)
    took_lock = wait_for(lambda: leader_pid(engine) == b.pid, 3 * INTERVAL + 5, "B to take the lock", (b,))
    first_run = wait_for(lambda: runs(engine, "ok", after=killed_at), 3 * INTERVAL + 5, "B to collect", (b,))
    # within one interval (plus jitter and process scheduling slack on a busy machine)
    assert took_lock <= INTERVAL + 1.5, took_lock
    assert took_lock + first_run <= 2 * INTERVAL + 2, (took_lock, first_run)
    # B's log line of that run follows its commit: wait for it rather than race the writer
    wait_for(lambda: b.scrape_lines(), 10, "B's log line of its collection", (b,))
    assert b.logged("leader: collecting")
    assert b.stop() == 0
    left = [r for r in runs(engine) if r.status != "ok"]
    # at most the batch A was in the middle of when it was killed; its prices were never committed,
    # and B marked its row abandoned when it took over
    assert len(left) <= 1 and all(r.status == "failed" and r.error_class == "Abandoned" and r.started_at < killed_at
                                  for r in left)


def test_sigterm_abandons_a_batch_still_running_after_the_grace(
    sqlite_engine: Engine, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    url = sqlite_engine.url.render_as_string(hide_password=False)
    proc = spawn(url, "slow", config='shutdown_grace = "1s"\n', slow_parse=60)
    wait_for(lambda: (tmp_path / "slow.parsing").exists(), 30, "the batch to be in flight", (proc,))
    t0 = time.monotonic()
    assert proc.stop(signal.SIGTERM) == 0
    assert time.monotonic() - t0 < 10
    [run] = runs(sqlite_engine)
    assert (run.status, run.error_class) == ("failed", "Interrupted")
    with Session(sqlite_engine) as session:
        assert session.exec(select(func.count()).select_from(Offer)).one() == 0  # nothing half-written
    assert proc.logged("abandoned lambda")


def test_a_second_signal_exits_at_once(sqlite_engine: Engine, spawn: Callable[..., Proc], tmp_path: Path) -> None:
    url = sqlite_engine.url.render_as_string(hide_password=False)
    proc = spawn(url, "force", config='shutdown_grace = "60s"\n', slow_parse=60)
    wait_for(lambda: (tmp_path / "force.parsing").exists(), 30, "the batch to be in flight", (proc,))
    proc.popen.send_signal(signal.SIGTERM)
    wait_for(lambda: proc.logged("SIGTERM received"), 10, "the first signal to be handled", (proc,))
    time.sleep(0.3)
    assert proc.popen.poll() is None  # still waiting for the batch
    t0 = time.monotonic()
    assert proc.stop(signal.SIGTERM, timeout=10) == 128 + signal.SIGTERM
    assert time.monotonic() - t0 < 5
    with Session(sqlite_engine) as session:
        assert session.exec(select(func.count()).select_from(Offer)).one() == 0
