"""The reading commands that open a current store with its own driver (``State.reader``:
``providers``, ``value``, ``alerts list``, ``trends``) answer exactly as the full path (SQLAlchemy, after
migrating and syncing the catalog) does, and a store that needs the full path still gets it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine

from db.engine import make_engine
from db.migrate import current_revision, head_revision, upgrade
from tests.conftest import run_main
from tracker.pipeline import opening

RULES = ('[[alerts]]\nname = "h100-under-2"\ngpu = "H100"\nbelow = 2.0\nnotify = ["console"]\n\n'
         '[[alerts]]\nname = "a100-any"\ngpu = ["A100*"]\nabove = 0.1\nkinds = "all"\nnotify = ["log"]\nrearm = "5%"\n')
COMMANDS = [["providers", "--format", "json"], ["providers"], ["value", "--format", "json", "--kind", "all"],
            ["value", "--gpu", "H100", "--provider", "runpod", "--format", "csv"], ["alerts", "list", "--format", "json"],
            ["alerts", "list"]]


def _opened_in_full(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs the full path (``tracker.pipeline.opening.open_store``) opens from now on."""
    opened: list[str] = []
    real = opening.open_store

    def recording(settings, url=None):  # noqa: ANN001, ANN202
        opened.append(url)
        return real(settings, url)

    monkeypatch.setattr(opening, "open_store", recording)
    return opened


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_listing_answers_alike_on_both_paths(replay_store: str, tmp_path: Path, args: list[str],
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "rules.toml"
    config.write_text(RULES)
    monkeypatch.setenv("COLUMNS", "200")
    opened = _opened_in_full(monkeypatch)
    with time_machine.travel(datetime.now(UTC), tick=False):  # both paths read the ages at one instant
        code, direct_out, direct_err = run_main(capsys, "--config", str(config), "--db", replay_store, *args)
        assert code == 0, direct_err
        assert opened == [], "a current store is read with its own driver"
        monkeypatch.setattr("db.direct.open_reader", lambda url, rows: None)
        code, full_out, full_err = run_main(capsys, "--config", str(config), "--db", replay_store, *args)
    assert code == 0, full_err
    assert opened, "the full path did run"
    assert (direct_out, direct_err) == (full_out, full_err)
    assert len(direct_out.splitlines()) > 2


@pytest.mark.parametrize("args", [["providers", "--format", "json"], ["value", "--format", "json"],
                                  ["alerts", "list", "--format", "json"], ["trends", "--format", "json"]], ids=" ".join)
def test_a_listing_of_a_store_behind_migrates_it(db_url: str, args: list[str], capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    eng = make_engine(db_url)
    try:
        upgrade(eng, "0006")
        opened = _opened_in_full(monkeypatch)
        code, out, err = run_main(capsys, "--db", db_url, *args)
        assert code == 0, err
        assert opened == [db_url], "the full path opened the store"
        assert current_revision(eng) == head_revision()
        assert out.strip() != "" and (args[0] != "providers" or '"provider": "runpod"' in out)
    finally:
        eng.dispose()


@pytest.mark.parametrize("args", [["trends", "--format", "json"], ["trends", "--kind", "all", "--gpu", "H100"],
                                  ["trends", "--region", "us-east-1", "--format", "csv"]], ids=" ".join)
def test_trends_answers_alike_on_both_paths(replay_store: str, args: list[str], monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """On the store's own driver, on SQLAlchemy's connection (a store the full path opened), and
    with region filters on the frame path."""
    monkeypatch.setenv("COLUMNS", "200")
    with time_machine.travel(datetime.now(UTC), tick=False):  # both paths read "as of" at one instant
        code, direct_out, direct_err = run_main(capsys, "--db", replay_store, *args)
        assert code == 0, direct_err
        monkeypatch.setattr("db.direct.open_reader", lambda url, rows: None)
        opened = _opened_in_full(monkeypatch)
        code, full_out, full_err = run_main(capsys, "--db", replay_store, *args)
    assert code == 0 and opened, full_err
    assert (direct_out, direct_err) == (full_out, full_err)
    assert len(direct_out.splitlines()) > 2
