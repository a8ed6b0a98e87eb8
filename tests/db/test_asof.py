"""``--at``: prices, value, tco and recommend as of a moment; and the note when the newest data
is older than the staleness limit (instead of printing nothing)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from db.engine import session_scope
from db.models import Provider
from db.reader import in_transaction
from db.reads import latest_prices, stale_note
from tests.analysis.seq import HOUR, T0, offer, scrape
from tracker.cli import app


def history(engine: Engine) -> None:
    """alpha: 3.0 for two hours, then 2.0; beta lists an A100 from the second hour; alpha's H100 gone at +4h."""
    scrape(engine, "alpha", T0, offer("alpha", "h", 3.0))
    scrape(engine, "alpha", T0 + HOUR, offer("alpha", "h", 3.0))
    scrape(engine, "beta", T0 + HOUR, offer("beta", "a", 1.2, gpu="A100-SXM-80GB"))
    scrape(engine, "alpha", T0 + 2 * HOUR, offer("alpha", "h", 2.0))
    scrape(engine, "alpha", T0 + 3 * HOUR, offer("alpha", "h", 2.0))
    scrape(engine, "alpha", T0 + 4 * HOUR)


def test_prices_at_follow_the_price_at_t_rule(engine: Engine) -> None:
    history(engine)
    with Session(engine) as s:
        def at(t: datetime) -> list[tuple[str, str, float]]:
            return [(r["provider"], r["sku"], r["price_per_gpu_hour"]) for r in latest_prices(in_transaction(s.connection()), at=t)]

        assert at(T0 - timedelta(minutes=1)) == []
        assert at(T0 + timedelta(minutes=30)) == [("alpha", "h", 3.0)]
        assert at(T0 + 90 * timedelta(minutes=1)) == [("beta", "a", 1.2), ("alpha", "h", 3.0)]
        # beta was collected once: its price holds one collection interval, not beyond
        assert at(T0 + 2 * HOUR) == [("alpha", "h", 2.0)]
        assert at(T0 + 3 * HOUR + timedelta(minutes=59)) == [("alpha", "h", 2.0)]
        # alpha's 4h collection no longer listed the H100: gone from then on, never carried
        assert at(T0 + 4 * HOUR) == []
        row = latest_prices(in_transaction(s.connection()), at=T0 + 90 * timedelta(minutes=1), gpus=["H100-SXM"])[0]
        assert row["observed_at"] == T0 + HOUR and row["price_since"] == T0
        assert set(row) == set(latest_prices(in_transaction(s.connection()), include_stale=True)[0])  # the same rows as "now", as of then


def test_stale_note_names_the_newest_data_and_the_at_option(engine: Engine) -> None:
    history(engine)
    with Session(engine) as s:
        assert stale_note(in_transaction(s.connection()), now=T0 + 5 * HOUR) is None
        note = stale_note(in_transaction(s.connection()), now=T0 + timedelta(days=30))
    assert note is not None
    assert "2026-01-01 04:00 UTC" in note and "--at 2026-01-01T04:00Z" in note and "alpha" in note


def cli(engine: Engine, *args: str) -> tuple[str, str]:
    res = CliRunner().invoke(app, ["--db", engine.url.render_as_string(hide_password=False), *args])
    assert res.exit_code == 0, (res.output, res.exception)
    return res.stdout, res.stderr


def test_the_commands_answer_as_of_then_and_say_when_data_is_old(sqlite_engine: Engine) -> None:
    history(sqlite_engine)
    when = (T0 + 90 * timedelta(minutes=1)).isoformat()
    out, err = cli(sqlite_engine, "prices", "--at", when, "--format", "json")
    assert [(r["provider"], r["price_per_gpu_hour"]) for r in json.loads(out)] == [("beta", 1.2), ("alpha", 3.0)]
    out, err = cli(sqlite_engine, "prices", "--format", "json")
    assert "the newest data is from 2026-01-01 04:00 UTC" in err and "--at" in err
    out, _ = cli(sqlite_engine, "value", "--gpu", "H100", "--at", when, "--format", "json")
    assert json.loads(out)[0]["price_per_gpu_hour"] == 3.0
    out, err = cli(sqlite_engine, "tco", "--gpu", "H100-SXM", "--at", (T0 + 2 * HOUR).isoformat(), "--format", "json")
    tco = json.loads(out)
    assert tco["rent"] == 2.0 and tco["rent_observed_at"].startswith("2026-01-01T02:00")
    out, err = cli(sqlite_engine, "recommend", "--params", "7B", "--workload", "inference", "--at", when,
                   "--format", "json")
    options = {o["gpu"]: o["price_per_hour"] for o in json.loads(out)["options"]}
    assert options.get("A100-SXM-80GB") == 1.2 and options.get("H100-SXM") == 3.0
    _out, err = cli(sqlite_engine, "recommend", "--params", "7B", "--workload", "inference")
    assert "the newest data is from" in err
    _out, err = cli(sqlite_engine, "alerts", "check", "--dry-run")
    assert "the newest data is from 2026-01-01 04:00 UTC" in err and "alerts backtest" in err


def test_fresh_data_gets_no_note(engine: Engine) -> None:
    scrape(engine, "alpha", datetime.now(T0.tzinfo) - timedelta(minutes=5), offer("alpha", "h", 3.0))
    with session_scope(engine) as s:
        assert s.get(Provider, "alpha") is not None
        assert stale_note(in_transaction(s.connection())) is None


def test_constants_match_their_sources() -> None:
    from db import reads, rollups
    from tracker.alerts import data

    assert reads.DEFAULT_INTERVAL_S == rollups.DEFAULT_INTERVAL_S
    assert reads.STALE_AFTER_INTERVALS == data.STALE_AFTER_INTERVALS
