"""`scrape` evaluates the alert rules after a successful collection, as `run` does; `--no-alerts` skips them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.alerts.helpers import Receiver, start_receiver
from tests.conftest import recordings_recorded_now
from tracker.cli import app

runner = CliRunner()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from start_receiver()


def config_with_rule(tmp_path: Path, receiver: Receiver) -> Path:
    path = tmp_path / "config.toml"
    path.write_text('[delivery]\nallow_hosts = ["127.0.0.1"]\n\n'
                    f'[[alerts]]\nname = "any-h100"\ngpu = "H100"\nbelow = 1000.0\nnotify = ["{receiver.url("json")}"]\n')
    return path


def scrape(db: str, config: Path, *extra: str) -> tuple[int, str]:
    """A replay of RunPod's recording as if recorded now: alerts count only fresh providers."""
    recordings = config.parent / "recordings-now"
    if not recordings.exists():
        recordings_recorded_now(config.parent, ["runpod"])
    result = runner.invoke(app, ["--db", db, "--config", str(config), "scrape", "--replay-dir", str(recordings),
                                 "-p", "runpod", "--format", "json", *extra])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


def test_scrape_fires_a_matching_rule_and_says_so(db_url: str, tmp_path: Path, receiver: Receiver) -> None:
    config = config_with_rule(tmp_path, receiver)
    code, err = scrape(db_url, config)
    assert code == 0
    assert len(receiver.requests) == 1
    body = receiver.bodies()[0]
    assert "any-h100" in str(body)
    assert "REPLAYED from the " in str(body) and "recording, not a live price" in str(body)  # the message says so
    assert "alerts: 1 rule(s) checked; fired: any-h100; 1 message(s) sent" in err
    code, err = scrape(db_url, config)  # edge-triggered: the same prices fire nothing new
    assert code == 0 and len(receiver.requests) == 1
    assert "alerts: 1 rule(s) checked; none fired; 0 message(s) sent" in err


def test_no_alerts_skips_them(db_url: str, tmp_path: Path, receiver: Receiver) -> None:
    code, err = scrape(db_url, config_with_rule(tmp_path, receiver), "--no-alerts")
    assert code == 0
    assert receiver.requests == [] and "alerts:" not in err
