"""Too little history is said, with how to get more: trends' good-deal minimum, one-point and empty results."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tracker.cli import app

runner = CliRunner()
HOW = "`gpu-tracker run`"


def invoke(db: str, *args: str) -> tuple[str, str]:
    result = runner.invoke(app, ["--db", db, *args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def test_one_day_of_history_is_no_good_deal_and_says_why(fresh_replay_store: str) -> None:
    out, err = invoke(fresh_replay_store, "trends", "--format", "json")
    rows = json.loads(out)
    assert rows and all(r["history_days"] == 1 and r["good_deal"] is False for r in rows)
    assert f"good deal needs 7 days of observations: {len(rows)} of {len(rows)} GPU(s) have fewer" in err
    assert HOW in err and "gpu-tracker import FILE" in err


def test_one_point_history_and_its_chart_say_what_is_missing(fresh_replay_store: str, tmp_path: Path) -> None:
    _, err = invoke(fresh_replay_store, "history", "--gpu", "H100-SXM", "--every", "1d")
    assert "H100-SXM: one point of history in this range" in err and HOW in err
    chart = tmp_path / "h100.html"
    invoke(fresh_replay_store, "plot", "--gpu", "H100-SXM", "--every", "1d", "-o", str(chart))
    assert "one point of history in this range" in chart.read_text()


def test_an_empty_store_says_how_to_fill_it(db_url: str) -> None:
    out, err = invoke(db_url, "trends")
    assert "no rows" in out
    assert "no price history matches these filters yet" in err and "gpu-tracker import FILE" in err
