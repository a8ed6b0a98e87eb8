"""The store's place and state: unusable paths are a one-line error within seconds, only the
default data directory is made on its own, a read-only store can be read, a damaged one is
found by `db check` and never written to by a collector."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from tests.reliability.service_procs import (
    ROOT,
    cli_env,
    isolate_config,
    one_line,
    run_main,
)
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.pipeline.opening import open_store

SETPRIV = shutil.which("setpriv")


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_config(monkeypatch, tmp_path)


def filled_sqlite(path: Path) -> Path:
    url = f"sqlite:///{path}"
    engine = open_store(Settings(database=url))
    [res] = collect(engine, Settings(database=url), ["lambda"], replay=True)
    assert res.status == "ok"
    engine.dispose()
    with sqlite3.connect(path) as conn:  # everything into the main file, no -wal left
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(("url", "needle"), [
    ("sqlite:////proc/x.db", "cannot create /proc/x.db"),
    ("sqlite:///{tmp}/no-such-dir/tracker.db", "does not exist (create it first"),
    ("sqlite:///{tmp}", "is not a file"),
    ("postgresql://nobody@127.0.0.1:9/tracker", "Connection refused"),
])
def test_an_unusable_database_is_one_line_within_seconds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         url: str, needle: str) -> None:
    url = url.format(tmp=tmp_path)
    for command in (["prices"], ["scrape", "--replay", "--provider", "lambda"], ["status"]):
        t0 = time.monotonic()
        code, _out, err = run_main(capsys, "--db", url, *command)
        assert code in (1, 2) and time.monotonic() - t0 < 10, (command, err)
        line = one_line(err)
        assert needle in line and "Error:" not in line, line
    assert not (tmp_path / "no-such-dir").exists()  # a mistyped directory is never created


def test_only_the_default_data_directory_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    code, _out, err = run_main(capsys, "prices")
    assert code == 0, err
    assert (tmp_path / "xdg" / "gpu-price-tracker" / "tracker.db").is_file()


@pytest.mark.skipif(SETPRIV is None, reason="needs setpriv (util-linux) to drop the capability to ignore file modes")
def test_a_read_only_store_can_be_read_and_is_not_written(tmp_path: Path) -> None:
    store = tmp_path / "ro"
    store.mkdir()
    db = filled_sqlite(store / "tracker.db")
    for leftover in store.glob("tracker.db?*"):
        leftover.unlink()
    before = digest(db)
    db.chmod(0o444)
    store.chmod(0o555)
    try:
        # as root but without CAP_DAC_OVERRIDE, so the file modes hold, as for any other user
        drop = [str(SETPRIV), "--bounding-set", "-dac_override,-dac_read_search", "--"]
        url = f"sqlite:///{db}"

        def gpu_tracker(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*drop, sys.executable, "-m", "tracker", "--db", url, *args], cwd=ROOT,
                                  env=cli_env(), capture_output=True, text=True, timeout=60, check=False)

        read = gpu_tracker("prices", "--format", "json")
        assert read.returncode == 0, read.stderr
        assert {r["provider"] for r in json.loads(read.stdout)} == {"lambda"}
        status = gpu_tracker("status", "--format", "json")
        assert status.returncode == 0, status.stderr
        checked = gpu_tracker("db", "check")
        assert checked.returncode == 0 and "ok" in checked.stdout, checked.stderr
        write = gpu_tracker("scrape", "--replay", "--provider", "lambda")
        assert write.returncode == 2 and "read-only for this user" in one_line(write.stderr)
        assert sorted(p.name for p in store.iterdir()) == ["tracker.db"]  # no lock file, no -wal, no -shm
    finally:
        store.chmod(0o755)
        db.chmod(0o644)
    assert digest(db) == before


def corrupt(db: Path, table: str = "offer") -> None:
    """Overwrite the first bytes of ``table``'s root b-tree page with junk (a damaged disk page)."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    with db.open("r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\x0d\xff\xff\xff\xff\xff\xff\xff" * 8)


def test_a_damaged_sqlite_store_is_found_and_never_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = filled_sqlite(tmp_path / "tracker.db")
    url = f"sqlite:///{db}"
    code, out, _ = run_main(capsys, "--db", url, "db", "check")
    assert code == 0 and "PRAGMA integrity_check" in out and "no problem found" in out
    corrupt(db)
    before = digest(db)
    for command in (["scrape", "--replay", "--provider", "lambda"], ["run", "--once", "--replay", "--provider", "lambda"]):
        code, out, err = run_main(capsys, "--db", url, *command)
        line = one_line(err)
        assert code == 2 and "failed its integrity quick check" in line and "db check" in line, line
    assert digest(db) == before  # nothing was written
    code, out, _ = run_main(capsys, "--db", url, "db", "check", "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["backend"] == "sqlite"
    assert report["problems"] and all(p for p in report["problems"]), report
    code, out, _ = run_main(capsys, "--db", url, "db", "check", "--quick")
    assert code == 1 and "quick_check" in out and "problem" in out


def test_db_check_on_a_sound_store(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    [res] = collect(engine, Settings(database=db_url), ["lambda"], replay=True)
    assert res.status == "ok"
    code, out, _ = run_main(capsys, "--db", db_url, "db", "check", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["problems"] == []
    if report["backend"] == "postgresql":
        assert "invalid indexes" in report["checks"][0]
        assert any(c.startswith("a full read of") and not c.startswith("a full read of 0 ") for c in report["checks"])
        assert any("amcheck" in c for c in report["checks"])
        _with_amcheck(engine, db_url, capsys)
    else:
        assert report["checks"] == ["PRAGMA integrity_check", "PRAGMA foreign_key_check"]
    code, _out, err = run_main(capsys, "--db", db_url, "scrape", "--replay", "--provider", "lambda")
    assert code == 0, err  # a sound store passes the collector's quick check


def _with_amcheck(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """PostgreSQL with the amcheck extension (in the test's own schema, dropped after): every
    b-tree index is checked too."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    try:
        with engine.begin() as conn:
            schema = conn.execute(text("SELECT current_schema()")).scalar()
            conn.execute(text(f'CREATE EXTENSION amcheck SCHEMA "{schema}"'))
    except DBAPIError:
        return  # not available on this server, or installed elsewhere already
    try:
        code, out, _ = run_main(capsys, "--db", db_url, "db", "check", "--format", "json")
        report = json.loads(out)
        assert code == 0 and report["ok"], report
        assert "amcheck bt_index_check on every b-tree index" in report["checks"]
    finally:
        with engine.begin() as conn:
            conn.execute(text("DROP EXTENSION IF EXISTS amcheck"))
