"""Rough edges a new user hits: a rule that fires at once or reaches nobody says so; an export that
cannot be written names the file; a range that ends in the future or before it starts is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from db.engine import make_engine
from db.migrate import init_db
from tests.alerts.helpers import Market, fast_settings, h100
from tracker.cli import app, main

runner = CliRunner()


@pytest.fixture
def market_db(db_url: str) -> str:
    """A store with one fresh H100 price (1.90), on both backends."""
    engine = make_engine(db_url)
    init_db(engine)
    Market(engine, fast_settings()).collect(alpha=[h100("a", 1.9)])
    engine.dispose()
    return db_url


def add(db: str, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    config = tmp_path / "config.toml"
    config.write_text('[delivery]\nallow_hosts = ["127.0.0.1"]\n')
    result = runner.invoke(app, ["--db", db, "--config", str(config), "alerts", "add", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_threshold_already_met_and_a_log_only_rule_are_said(market_db: str, tmp_path: Path) -> None:
    code, out, err = add(market_db, tmp_path, "silly", "--gpu", "H100", "--below", "1e9", "--notify", "log")
    assert code == 0 and "added alert rule silly" in out
    assert "note: it fires at the first check: the min now is 1.9 (alpha), already below 1e+09" in err
    assert "note: the log channel sends nothing" in err
    code, _, err = add(market_db, tmp_path, "sane", "--gpu", "H100", "--below", "1.5", "--notify", "console")
    assert code == 0 and err == "", "a rule not met now, with a channel that shows, needs no note"
    code, _, err = add(market_db, tmp_path, "high", "--gpu", "H100", "--above", "1.0", "--notify", "console")
    assert "fires at the first check: the min now is 1.9 (alpha), already above 1" in err


@pytest.mark.parametrize("fmt", ["focus", "parquet", "opencost"])
def test_an_export_that_cannot_be_written_names_the_file(replay_store: str, fmt: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = Path("/proc/version")  # exists, and refuses every write, root's too
    with pytest.raises(SystemExit) as stop:
        main(["--db", replay_store, "export", "--format", fmt, "-o", str(target)])
    assert stop.value.code == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and err.endswith(f"({target})"), err


def test_a_permission_error_of_a_writer_names_the_file(replay_store: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from tracker.export import focus

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")  # as a writer raises it, without the file name

    monkeypatch.setattr(focus, "write", refuse)
    target = tmp_path / "prices.csv"
    with pytest.raises(SystemExit):
        main(["--db", replay_store, "export", "--format", "focus", "-o", str(target)])
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: permission denied: {target};"), err


@pytest.mark.parametrize("command", [
    ["history", "--gpu", "H100", "--until", "2999-01-01"],
    ["plot", "--gpu", "H100", "--until", "2999-01-01", "-o", "/tmp/never.png"],
    ["alerts", "backtest", "--gpu", "H100", "--below", "2", "--until", "2999-01-01"],
    ["prices", "--at", "2999-01-01"],
    ["trends", "--as-of", "2999-01-01"],
    ["value", "--at", "2999-01-01"],
    ["recommend", "--params", "7B", "--workload", "inference", "--at", "2999-01-01"],
])
def test_a_moment_in_the_future_is_refused(replay_store: str, command: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--db", replay_store, *command])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "2999-01-01: that is in the future" in err, err


@pytest.mark.parametrize("command", [
    ["history", "--gpu", "H100"],
    ["plot", "--gpu", "H100", "-o", "/tmp/never.png"],
    ["alerts", "backtest", "--gpu", "H100", "--below", "2"],
])
def test_an_inverted_range_is_an_error(replay_store: str, command: list[str],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--db", replay_store, *command, "--since", "2026-06-01", "--until", "2026-05-01"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "after it ends" in err, err


def test_a_locked_store_says_another_process_is_writing_and_that_it_waits(tmp_path: Path) -> None:
    """SQLite only: a PostgreSQL writer locks rows, never the whole store. Another process holds the
    store's write lock until `alerts add` says it waits (however slow the machine), then lets go; the
    command then adds its rule."""
    import sqlite3

    from tests.terminal import run_in_terminal

    path = tmp_path / "tracker.db"
    engine = make_engine(f"sqlite:///{path}")
    init_db(engine)
    engine.dispose()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    try:
        screen = run_in_terminal(["--db", f"sqlite:///{path}", "alerts", "add", "cheap", "--gpu", "H100",
                                  "--below", "2", "--notify", "console"], width=100,
                                 when=("waiting:", lambda: holder.execute("ROLLBACK")))
    finally:
        holder.close()
    assert screen.exit_code == 0, screen.text
    assert "waiting: another process is writing to the store" in screen.text
    assert "added alert rule cheap" in screen.text
    assert screen.text.index("waiting:") < screen.text.index("added alert rule")


def test_a_lock_held_past_the_busy_timeout_is_one_line() -> None:
    import sqlite3

    from tracker.cli.errors import describe

    message, code = describe(sqlite3.OperationalError("database is locked"))
    assert code == 1
    assert message.startswith("the store is locked: another process is writing to it")
    assert "try again when it is done" in message
