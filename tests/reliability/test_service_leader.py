"""Leader election and crash recovery with real `gpu-tracker run` processes: one leader per store
whatever path reaches it, a frozen leader (SIGSTOP) loses the lead to a standby and, woken,
writes nothing; runs left `running` by `kill -9` are marked abandoned by the next start."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from db.engine import make_engine
from db.models import Offer
from db.types import utcnow
from tests.tracker import test_run_process as procs
from tests.tracker.test_run_process import INTERVAL, Proc, leader_pid, runs, wait_for
from tracker.service import leader

pytestmark = pytest.mark.slow

spawn = procs.spawn  # the scheduler process tests' fixture: `run --replay` of lambda every 2 s
LEASE = 3.0
FAST_LEASE = f'heartbeat = "1s"\nlease = "{LEASE:g}s"\n'


def lease_owner(engine: Engine) -> tuple[int, int] | None:
    """(pid, epoch) of the lease holder."""
    try:
        with engine.connect() as conn:
            row = conn.execute(select(leader.lease_table)).mappings().first()
    except Exception:  # noqa: BLE001 - table being created by a subprocess
        return None
    return (row["pid"], row["epoch"]) if row else None


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
    _pid, epoch = lease_owner(engine) or (0, 0)

    os.kill(a.pid, signal.SIGSTOP)
    frozen_at = utcnow()
    try:
        took = wait_for(lambda: (lease_owner(engine) or (0, 0))[0] == b.pid, LEASE + 10, "B to take the lease", (b,))
        first = wait_for(lambda: runs(engine, "ok", after=frozen_at), 3 * INTERVAL + 5, "B to collect", (b,))
        # the lease runs out at most LEASE after A's last renewal; B polls every half second
        assert took <= LEASE + 2.5, took
        assert took + first <= LEASE + INTERVAL + 4, (took, first)
        assert (lease_owner(engine) or (0, 0))[1] > epoch
        a_lines = len(a.scrape_lines())
    finally:
        os.kill(a.pid, signal.SIGCONT)
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
