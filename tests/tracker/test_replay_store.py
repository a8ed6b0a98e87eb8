"""Replayed and live prices never share a store unless asked: recorded prices are old, and in a live
store they would read as its history (trends, the 30-day change, an all-time low from a recording)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db.engine import make_engine
from db.migrate import init_db
from db.models import ScrapeRun
from tests.conftest import run_main
from tracker.pipeline.replay import mixing_refusal


def add_run(engine: Engine, *, replay: bool, status: str = "ok") -> None:
    with Session(engine) as s:
        s.add(ScrapeRun(provider="akash", status=status, source="replay" if replay else "live", started_at=datetime(2026, 1, 1, tzinfo=UTC)))
        s.commit()


def test_a_store_takes_either_kind_until_it_holds_one(engine: Engine) -> None:
    assert mixing_refusal(engine, replay=True, store="db") is None
    assert mixing_refusal(engine, replay=False, store="db") is None
    add_run(engine, replay=False, status="failed")  # a failed collection stored no price
    assert mixing_refusal(engine, replay=True, store="db") is None
    add_run(engine, replay=True)
    assert mixing_refusal(engine, replay=True, store="db") is None
    reason = mixing_refusal(engine, replay=False, store="db")
    assert reason is not None and reason.startswith("db holds prices replayed from recordings")
    assert "your live store instead" in reason and "--mix-replay" not in reason


def test_a_replay_into_a_live_store_is_refused_in_one_line_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path}/live.db"
    engine = make_engine(db)
    init_db(engine)
    add_run(engine, replay=False)
    code, out, err = run_main(capsys, "--db", db, "scrape", "--replay", "--provider", "akash", "--no-alerts")
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "holds live prices" in err and "--db sqlite:///demo.db" in err
    assert "--mix-replay" not in err  # the hint never leads to mixing recordings into a live store
    with Session(engine) as s:
        assert [r.source == "replay" for r in s.exec(select(ScrapeRun)).all()] == [False]
    code, out, err = run_main(capsys, "--db", db, "run", "--once", "--replay", "--provider", "akash")
    assert code != 0 and "holds live prices" in err
    engine.dispose()


def test_mix_replay_says_yes_to_mixing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path}/live.db"
    engine = make_engine(db)
    init_db(engine)
    add_run(engine, replay=False)
    code, out, _ = run_main(capsys, "--db", db, "scrape", "--replay", "--provider", "akash", "--no-alerts", "--mix-replay", "--format", "json")
    assert code == 0 and [r["status"] for r in json.loads(out)] == ["ok"]
    engine.dispose()


def test_a_live_collection_into_a_replayed_store_is_refused_before_any_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path}/demo.db"
    code, _, _ = run_main(capsys, "--db", db, "scrape", "--replay", "--provider", "akash", "--no-alerts")
    assert code == 0
    code, again, _ = run_main(capsys, "--db", db, "scrape", "--replay", "--provider", "akash", "--no-alerts", "--format", "json")
    assert code == 0 and json.loads(again)[0]["status"] == "ok"  # replaying again into a replay store is fine
    for command in (["scrape", "--provider", "akash", "--no-alerts"], ["run", "--once", "--provider", "akash"]):
        code, out, err = run_main(capsys, "--db", db, *command)
        assert code != 0 and out == ""
        assert "holds prices replayed from recordings" in err and err.count("\n") == 1
        assert "your live store instead" in err and "--mix-replay" not in err


def test_imported_history_is_neither_live_nor_replayed(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``make demo``: a replay, real archives imported, and the same again, all into one store."""
    from tests.conftest import fixture_path

    archive = str(fixture_path("history-archives/tugot17_H100_80GB_SXM5_until_2025-10-25.jsonl"))
    code, _, err = run_main(capsys, "--db", db_url, "import", archive)
    assert code == 0, err
    engine = make_engine(db_url)
    try:
        assert mixing_refusal(engine, replay=True, store="db") is None
        assert mixing_refusal(engine, replay=False, store="db") is None
        for _ in range(2):
            code, _, err = run_main(capsys, "--db", db_url, "scrape", "--replay", "--provider", "akash", "--no-alerts")
            assert code == 0, err
            code, _, err = run_main(capsys, "--db", db_url, "import", archive)
            assert code == 0, err
        reason = mixing_refusal(engine, replay=False, store="db")
        assert reason is not None and reason.startswith("db holds prices replayed from recordings")
    finally:
        engine.dispose()
