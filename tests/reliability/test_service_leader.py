"""Leader election and crash recovery with real `gpu-tracker run` processes: one leader per store
whatever path reaches it, a frozen leader (SIGSTOP) loses the lead to a standby and, woken,
writes nothing; runs left `running` by `kill -9` are marked abandoned by the next start."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from db.engine import make_engine
from db.models import Offer
from db.spans import utcnow
from tests.tracker import test_run_process as procs
from tests.tracker.test_run_process import INTERVAL, Proc, leader_pid, runs, wait_for
from tracker.service import leader

pytestmark = pytest.mark.slow

spawn = procs.spawn  # the scheduler process tests' fixture: `run --replay` of lambda every 2 s
LEASE = 3.0
FAST_LEASE = f'heartbeat = "1s"\nlease = "{LEASE:g}s"\n'
#: How often a standby asks for the lease (``SchedulerService.standby_poll``: a quarter of the
#: shortest interval, at least 0.25 s).
STANDBY_POLL = max(INTERVAL / 4, 0.25)
#: How late a standby's wake-up may be on a loaded machine (two busy cores), on top of its poll.
WAKE_SLACK = 2.0
#: Generous waits: on a loaded machine everything is slower; the order of events and the lease's
#: own recorded times, not these, say whether the take-over was right.
TAKEOVER_WAIT = LEASE + 60


def lease_row(engine: Engine) -> dict[str, Any] | None:
    """The lease row as stored."""
    try:
        with engine.connect() as conn:
            row = conn.execute(select(leader.lease_table)).mappings().first()
    except Exception:  # noqa: BLE001 - table being created by a subprocess
        return None
    return dict(row) if row else None


def lease_owner(engine: Engine) -> tuple[int, int] | None:
    """(pid, epoch) of the lease holder."""
    row = lease_row(engine)
    return (row["pid"], row["epoch"]) if row else None


def stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (``SIGSTOP`` has taken effect: it renews nothing more)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return bool(tasks) and all((t / "stat").read_text().rsplit(")", 1)[1].split()[0] == "T" for t in tasks)
    except FileNotFoundError:  # a thread ended while being looked at: look again
        return False


def test_a_symlinked_path_meets_the_same_leader(tmp_path: Path, spawn: Callable[..., Proc]) -> None:
    real = tmp_path / "store" / "tracker.db"
    real.parent.mkdir()
    link = tmp_path / "elsewhere.db"
    link.symlink_to(real)
    engine = make_engine(f"sqlite:///{real}")
    try:
        a = spawn(f"sqlite:///{link}", "via-link", config=FAST_LEASE)
        wait_for(lambda: leader_pid(engine) == a.pid and runs(engine, "ok"), 30, "A to lead", (a,))
        b = spawn(f"sqlite:///{real}", "via-file", config=FAST_LEASE)
        wait_for(lambda: b.logged("standby: another scheduler collects"), 30, "B to stand by", (a, b))
        n = len(runs(engine, "ok"))
        wait_for(lambda: len(runs(engine, "ok")) >= n + 2, 20, "A to go on collecting", (a, b))
        assert b.scrape_lines() == [] and not b.logged("leader: collecting")
        assert len(a.scrape_lines()) >= len(runs(engine)) - 1  # every run is A's (one may be in flight)
        assert a.stop() == 0
        wait_for(lambda: leader_pid(engine) == b.pid, 10, "B to take over once A let go", (b,))
        assert b.stop() == 0
    finally:
        engine.dispose()


def test_a_frozen_leader_loses_the_lead_and_writes_nothing_when_woken(
    engine: Engine, db_url: str, spawn: Callable[..., Proc]
) -> None:
    a = spawn(db_url, "a", config=FAST_LEASE)
    wait_for(lambda: leader_pid(engine) == a.pid and runs(engine, "ok"), 30, "A to lead and collect", (a,))
    b = spawn(db_url, "b", config=FAST_LEASE)
    wait_for(lambda: b.logged("standby: another scheduler collects"), 30, "B to stand by", (a, b))

    os.kill(a.pid, signal.SIGSTOP)
    frozen_at = utcnow()
    try:
        wait_for(lambda: stopped(a.pid), 10, "A to be stopped", (a,))
        old = lease_row(engine)  # A's last renewal: frozen, it renews no more
        assert old is not None and old["pid"] == a.pid and old["released_at"] is None, old
        wait_for(lambda: (lease_owner(engine) or (0, 0))[0] == b.pid, TAKEOVER_WAIT, "B to take the lease", (b,))
        wait_for(lambda: runs(engine, "ok", after=frozen_at), TAKEOVER_WAIT, "B to collect", (b,))
        new = lease_row(engine)
        first = runs(engine, "ok", after=frozen_at)[0]
        a_lines = len(a.scrape_lines())
    finally:
        os.kill(a.pid, signal.SIGCONT)
    # Judged on the lease's own times (one host, one clock), not on how long this test waited:
    # B took the next epoch once A's lease had run out, within a poll (plus a late wake-up) of it
    assert new is not None and (new["pid"], new["epoch"]) == (b.pid, old["epoch"] + 1), (old, new)
    late = (new["acquired_at"] - old["expires_at"]).total_seconds()
    assert 0 <= late <= STANDBY_POLL + WAKE_SLACK, (late, old, new)
    # and collected once it held the lease, at its first due run (A's schedule, which it took over)
    assert 0 <= (first.started_at - new["acquired_at"]).total_seconds() <= INTERVAL + 2 * WAKE_SLACK, (new, first)
    wait_for(lambda: a.logged("lost the scheduler lock"), 15, "A to notice it lost the lead", (a, b))
    n = len(runs(engine, "ok"))
    wait_for(lambda: len(runs(engine, "ok")) >= n + 2, 20, "B to go on collecting", (a, b))
    assert leader_pid(engine) == b.pid and (lease_owner(engine) or (0, 0))[0] == b.pid
    assert a.stop() == 0 and b.stop() == 0
    # A stored nothing once woken: every run since the freeze is one of B's scrapes
    assert len(a.scrape_lines()) == a_lines
    since = runs(engine, after=frozen_at)
    assert since and len(since) == len(b.scrape_lines()) and {r.status for r in since} == {"ok"}


def test_runs_left_running_by_kill_9_are_abandoned_at_the_next_start(
    engine: Engine, db_url: str, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    a = spawn(db_url, "slow", config=FAST_LEASE, slow_parse=60)
    wait_for(lambda: (tmp_path / "slow.parsing").exists(), 30, "a batch to be in flight", (a,))
    a.popen.send_signal(signal.SIGKILL)
    a.popen.wait(10)
    [orphan] = runs(engine)
    assert orphan.status == "running"  # nobody is left to say otherwise

    t0 = time.monotonic()
    b = spawn(db_url, "next", config=FAST_LEASE)
    wait_for(lambda: runs(engine, "ok"), 30, "the next scheduler to collect", (b,))
    assert time.monotonic() - t0 < 20  # the dead leader's lease did not hold it up
    assert b.stop() == 0
    first = runs(engine)[0]
    assert first.id == orphan.id and (first.status, first.error_class) == ("failed", "Abandoned")
    assert "killed" in (first.error_message or "") and "none of it was stored" in (first.error_message or "")
    assert first.finished_at is not None and first.finished_at >= orphan.started_at
    assert [r.status for r in runs(engine)].count("running") == 0
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Offer)).one() > 0  # B's, not half of A's
