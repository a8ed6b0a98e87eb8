"""`run` logs one line per collection cycle, and migrations stay quiet unless --debug."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tracker.pipeline.collect import RunResult
from tracker.service.scheduler import cycle_summary

ROOT = Path(__file__).parent.parent.parent


def run_once(db: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tracker", *extra, "--db", db, "run", "--once", "--replay",
                           "-p", "runpod", "-p", "lambda", "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_one_cycle_line_and_no_migration_chatter(db_url: str) -> None:
    proc = run_once(db_url)
    assert proc.returncode == 0, proc.stderr
    assert "alembic" not in proc.stderr
    cycles = [line for line in proc.stderr.splitlines() if " cycle providers=" in line]
    assert len(cycles) == 1
    summary = json.loads(proc.stdout)
    offers = sum(r["offers"] for r in summary)
    assert cycles[0].endswith(f"cycle providers=2 ok=2 failed=0 skipped=0 offers={offers} changed=0 "
                              "alerts_sent=0 next_run=none")


def test_debug_shows_the_migrations(db_url: str) -> None:
    proc = run_once(db_url, "--debug")
    assert proc.returncode == 0, proc.stderr
    assert "Running upgrade" in proc.stderr or "alembic" in proc.stderr


def test_cycle_summary_counts_each_status() -> None:
    at = datetime(2026, 12, 1, 12, tzinfo=UTC)
    results = [RunResult("a", "ok", at, 1.0, offers_seen=10, prices_changed=2),
               RunResult("b", "failed", at, 1.0), RunResult("c", "skipped", at, 0.0),
               RunResult("d", "ok", at, 1.0, offers_seen=5, prices_changed=1)]
    assert cycle_summary(results, 3, datetime(2026, 12, 1, 13, tzinfo=UTC)) == (
        "cycle providers=4 ok=2 failed=1 skipped=1 offers=15 changed=3 alerts_sent=3 next_run=2026-12-01T13:00:00+00:00")
