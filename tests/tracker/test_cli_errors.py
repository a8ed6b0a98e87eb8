"""The CLI entry's one error handler: one line naming what to do, an exit code, no exception names."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DatabaseError

from tracker.cli import main
from tracker.cli.errors import describe
from tracker.errors import ConfigError

ROOT = Path(__file__).parent.parent.parent
EXCEPTION_NAMES = ("Error:", "Exception", "Traceback", "sqlalchemy", "PermissionError", "ModuleNotFoundError",
                   "ValueError", "MySQLdb.")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    for name in EXCEPTION_NAMES:
        assert name not in lines[0], lines[0]
    return lines[0]


def test_unknown_database_driver_is_one_line_and_hides_the_password() -> None:
    proc = run("--db", "mysql://user:s3cret@127.0.0.1/tracker", "prices")
    assert proc.returncode == 1
    line = one_line(proc.stderr)
    assert "'MySQLdb' is not installed" in line and "sqlite:///" in line and "postgresql://" in line
    assert "s3cret" not in proc.stderr


def test_corrupted_database_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "tracker.db"
    bad.write_bytes(b"this is not an SQLite database, it was overwritten by something else\n" * 200)
    proc = run("--db", f"sqlite:///{bad}", "prices")
    assert proc.returncode == 1
    line = one_line(proc.stderr)
    assert "file is not a database" in line and "move the file aside" in line


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "tracker.db"
    bad.write_bytes(b"not a database\n" * 400)
    proc = run("--debug", "--db", f"sqlite:///{bad}", "prices")
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "DatabaseError" in proc.stderr


def test_permission_error_names_the_file_and_what_to_do() -> None:
    message, code = describe(PermissionError(13, "Permission denied", "/var/lib/gpu-tracker/tracker.db"))
    assert code == 1
    assert message.startswith("permission denied: /var/lib/gpu-tracker/tracker.db; check the owner and mode")


def test_value_error_and_the_unexpected_are_one_line_without_their_class() -> None:
    assert describe(ValueError("could not convert string to float: 'abc'\nmore detail")) == (
        "invalid value: could not convert string to float: 'abc'", 2)
    message, code = describe(RuntimeError("boom"))
    assert code == 1 and message == "unexpected error: boom (run with --debug for the traceback)"


def test_database_errors_keep_only_the_driver_reason() -> None:
    eng = create_engine("sqlite://")
    with pytest.raises(DatabaseError) as caught, eng.connect() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    message, code = describe(caught.value)
    assert code == 1 and "\n" not in message and "no such table: no_such_table" in message
    assert "SELECT" not in message
    wrapped = DatabaseError("SELECT 1", {}, sqlite3.DatabaseError("database disk image is malformed"))
    assert "move the file aside" in describe(wrapped)[0]


def test_secrets_in_urls_are_masked() -> None:
    message, code = describe(ConfigError("cannot reach postgresql://app:hunter2@db.internal/tracker"))
    assert code == 2 and "hunter2" not in message and "postgresql://app:***@db.internal/tracker" in message


def test_in_process_entry_exits_with_the_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--db", f"sqlite:///{tmp_path / 't.db'}", "prices", "--gpu", "NoSuchGPU"])
    assert stop.value.code == 2
    assert one_line(capsys.readouterr().err).startswith("error: --gpu: 'NoSuchGPU' matches no GPU")
