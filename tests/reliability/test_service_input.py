"""Careless input is a one-line error that stores nothing: intervals in the config model,
``--limit``, NaN and infinite thresholds, notify URLs with credentials (on both backends)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.reader import in_transaction
from tests.reliability.service_procs import isolate_config, one_line, run_main
from tracker.alerts.redact import literal_secrets
from tracker.alerts.store import load_rules
from tracker.config.settings import Settings, load_settings
from tracker.errors import ConfigError
from tracker.pipeline.collect import collect

SECRET = "hunter2-Pa55word-0451"
#: Slack and Telegram check the shape of their tokens.
ALNUM = "Hunter2Pa55word0451AbcdX"


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_config(monkeypatch, tmp_path)


@pytest.mark.parametrize(("toml", "key", "needle"), [
    ('default_interval = "0.01s"', "default_interval", "at least 1s"),
    ("default_interval = true", "default_interval", "true is not a duration"),
    ('[providers.lambda]\ninterval = true', "providers.lambda.interval", "true is not a duration"),
    ('[providers.lambda]\ninterval = "0.5s"', "providers.lambda.interval", "at least 1s"),
    ('[providers.lambda]\ninterval = "400d"', "providers.lambda.interval", "at most 366d"),
    ("default_interval = nan", "default_interval", "not a duration"),
    ("default_interval = -5", "default_interval", "not a duration"),
    ('[http]\ntimeout_s = 0', "http.timeout_s", "at least 0.1s"),
    ("[http]\nretries = true", "http.retries", "not true"),
    ("[http]\nbackoff_s = inf", "http.backoff_s", "not a duration"),
    ('[scheduler]\nheartbeat = "0s"', "scheduler.heartbeat", "at least 0.5s"),
    ('[scheduler]\nretry_base = "0.01s"', "scheduler.retry_base", "or 0 to switch it off"),
    ('[scheduler]\nlease = "1s"', "scheduler.lease", "at least 2s"),
    ("[scheduler]\njitter = false", "scheduler.jitter", "false is not a duration"),
    ("[web]\nport = true", "web.port", "not true"),
    ("currency_rates = { EUR = nan }", "currency_rates.EUR", "greater than 0"),
])
def test_config_model_bounds_every_interval(tmp_path: Path, toml: str, key: str, needle: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    message = str(caught.value)
    assert "\n" not in message and f"{key}: " in message and needle in message, message
    with pytest.raises(Exception, match="at least 1s"):
        Settings(default_interval=0.01)  # the model itself, not only the file loader


def test_accepted_durations() -> None:
    s = Settings(default_interval="90s", scheduler={"retry_base": 0, "heartbeat": "1s", "lease": "10s"},
                 providers={"lambda": {"interval": "1h"}})
    assert (s.default_interval, s.scheduler.retry_base, s.scheduler.heartbeat, s.scheduler.lease) == (90, 0, 1, 10)
    assert s.interval_for("lambda") == 3600


def test_run_with_a_too_short_interval_stops_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.toml"
    path.write_text('default_interval = "0.01s"\n')
    t0 = time.monotonic()
    code, _out, err = run_main(capsys, "--config", str(path), "--db", f"sqlite:///{tmp_path / 't.db'}", "run",
                               "--replay")
    assert code == 2 and time.monotonic() - t0 < 10
    assert "default_interval: must be at least 1s" in one_line(err)
    assert not (tmp_path / "t.db").exists()


def test_limit_must_be_positive(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    [res] = collect(engine, Settings(database=db_url), ["lambda"], replay=True)
    assert res.status == "ok"
    code, out, _ = run_main(capsys, "--db", db_url, "prices", "--format", "json")
    everything = json.loads(out)
    assert code == 0 and len(everything) > 2
    for bad in ("-1", "0"):
        code, out, err = run_main(capsys, "--db", db_url, "prices", "--limit", bad, "--format", "json")
        assert code == 2 and out == "" and "--limit" in err and "greater than or equal to 1" in err
    code, out, _ = run_main(capsys, "--db", db_url, "prices", "--limit", "2", "--format", "json")
    # each read takes its rows' age from the clock, so two reads a second apart differ only there
    assert [{**r, "age_s": None} for r in json.loads(out)] == [{**r, "age_s": None} for r in everything[:2]]
    for cmd in (["alerts", "history", "--limit", "-1"], ["recommend", "--params", "7B", "--workload", "lora", "-n", "-1"]):
        code, _, err = run_main(capsys, "--db", db_url, *cmd)
        assert code == 2 and "--limit" in err, cmd


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_non_finite_thresholds_are_refused(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str],
                                           value: str) -> None:
    for flag in ("--below", "--above"):
        code, _out, err = run_main(capsys, "--db", db_url, "alerts", "add", "r", "--gpu", "H100", flag, value)
        assert code == 2 and f"'{flag}': {value.lower().replace('nan', 'nan')}" in err.lower() and "finite" in err
    code, _out, err = run_main(capsys, "--db", db_url, "alerts", "add", "r", "--gpu", "H100", "--below", "2",
                               "--rearm", value)
    assert code == 2 and "rearm" in one_line(err)
    with Session(engine) as session:
        assert [r.name for r in load_rules(Settings(database=db_url), in_transaction(session.connection()))] == []
    # the rule model refuses them too (config file rules)
    from tracker.alerts.rules import parse_rule

    with pytest.raises(ConfigError, match="below: must be a number"):
        parse_rule({"name": "x", "gpu": "H100", "below": float(value)}, where="alerts[0]")


@pytest.mark.parametrize("url", [
    f"mailto://alerts:{SECRET}@example.com",
    f"json://bot:{SECRET}@hooks.example.com/hook",
    f"slack://T024BE7LD/B024BE7LH/{ALNUM}",
    f"tgram://123456789:AAH{ALNUM}{ALNUM[:8]}/987654",
    f"discord://1234567890/{SECRET}",
    f"ntfy://{SECRET}",
    f"webhook+https://hooks.example.com/notify?token={SECRET}",
    f"webhook+https://hooks.example.com/in/{SECRET}",
    f"webhook+https://hooks.slack.com/services/T00000000/B00000000/{SECRET}",
])
def test_notify_url_with_credentials_is_refused(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str],
                                                url: str) -> None:
    assert literal_secrets(url)
    code, out, err = run_main(capsys, "--db", db_url, "alerts", "add", "r", "--gpu", "H100", "--below", "2",
                              "--notify", "log", "--notify", url)
    line = one_line(err)
    assert code == 2 and "--notify #2" in line and "--notify env:ALERT_" in line and "--allow-literal-secret" in line
    assert SECRET not in out + err and ALNUM not in out + err
    with Session(engine) as session:
        assert load_rules(Settings(database=db_url), in_transaction(session.connection())) == []
    code, out, err = run_main(capsys, "--db", db_url, "alerts", "add", "r", "--gpu", "H100", "--below", "2",
                              "--notify", url, "--allow-literal-secret")
    assert code == 0 and SECRET not in out + err and ALNUM not in out + err, err
    with Session(engine) as session:
        [rule] = load_rules(Settings(database=db_url), in_transaction(session.connection()))
    assert rule.notify == (url,)


@pytest.mark.parametrize("url", ["json://127.0.0.1:9999/hook", "webhook+https://hooks.example.com/gpu-alerts",
                                 "env:ALERT_SLACK_URL", "console", "log", "json://localhost/a?format=markdown"])
def test_notify_without_credentials_is_accepted(url: str) -> None:
    assert literal_secrets(url) == []
