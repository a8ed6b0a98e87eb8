"""Digests (issue 8, optional part): a daily or weekly summary per channel list.

Timing with an injected clock, the content (best current price per watched GPU, changes since
the previous digest, failed providers and quarantined prices kept out), delivery through the
outbox to a real local server (a JSON webhook answering 500 then 200, Apprise ``json://``),
never twice (a restart, a concurrent sender), the CLI and ``config check``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from db.engine import engine_reader, make_engine
from db.migrate import init_db
from db.models import DigestState
from db.spans import utcnow
from tests.alerts.helpers import (
    Market,
    Receiver,
    cli,
    events,
    fast_settings,
    h100,
    outbox,
)
from tracker.alerts import after_collect, deliver_pending, history
from tracker.alerts import digest as digest_mod
from tracker.alerts.channels import SIGNATURE_HEADER
from tracker.alerts.digest import run
from tracker.alerts.digest_config import parse_digest
from tracker.config.check import check_file, masked_settings
from tracker.config.settings import Settings, load_settings
from tracker.errors import ConfigError

H = timedelta(hours=1)
DAY = timedelta(days=1)
SECRET = "digest-hmac-s3cret"
TOKEN = "tok-SECRET-d1g3st"


def midnight() -> datetime:
    """Today 00:00 UTC: injected clocks stay within a few days of the real scrape times."""
    return utcnow().replace(hour=0, minute=0, second=0, microsecond=0)


def gpu(sku: str, name: str, price: float, **extra: Any) -> dict[str, Any]:
    return {"sku": sku, "gpu": name, "count": 1, "price": price, **extra}


def settings(*digests: dict[str, Any], rules: tuple[dict[str, Any], ...] = (), **kw: Any) -> Settings:
    # providers are scraped "weekly" here, so data stays fresh (not stale) for days of injected clock
    return fast_settings(*rules, digests=list(digests), default_interval=7 * 86400, **kw)


def morning(receiver: Receiver, **kw: Any) -> dict[str, Any]:
    return {"name": "morning", "every": "daily", "at": "08:00", "gpus": ["H100", "A100-SXM-80GB"],
            "notify": [receiver.url("webhook+http", "digest")], **kw}


def states(engine: Engine) -> list[DigestState]:
    with Session(engine) as s:
        return list(s.exec(select(DigestState)).all())


# --- schedule ------------------------------------------------------------------------------


def test_schedule_daily_weekly_and_duration() -> None:
    wed = datetime(2026, 12, 2, 7, 59, tzinfo=UTC)  # a Wednesday
    daily = parse_digest({"name": "d", "every": "daily", "at": "08:00"})
    assert daily.describe() == "daily at 08:00 UTC"
    assert daily.latest_slot(wed) == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    sent = datetime(2026, 12, 1, 8, 20, tzinfo=UTC)
    assert daily.next_due(sent) == datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
    assert not daily.is_due(sent, wed) and daily.is_due(sent, wed + timedelta(minutes=1))
    # sent exactly at a slot: the next one is a day later
    assert daily.next_due(datetime(2026, 12, 2, 8, 0, tzinfo=UTC)) == datetime(2026, 12, 3, 8, 0, tzinfo=UTC)

    weekly = parse_digest({"name": "w", "every": "weekly", "day": "fri", "at": "18:30"})
    assert weekly.describe() == "weekly on Friday at 18:30 UTC"
    assert weekly.next_due(wed) == datetime(2026, 12, 4, 18, 30, tzinfo=UTC)
    assert weekly.next_due(datetime(2026, 12, 4, 18, 30, tzinfo=UTC)) == datetime(2026, 12, 11, 18, 30, tzinfo=UTC)
    assert parse_digest({"name": "w2", "every": "weekly"}).describe() == "weekly on Monday at 00:00 UTC"

    every = parse_digest({"name": "i", "every": "12h"})
    assert every.describe() == "every 12h" and every.latest_slot(wed) is None
    assert every.next_due(wed) == wed + 12 * H
    assert parse_digest({"name": "x"}).describe() == "daily at 00:00 UTC"  # every defaults to daily


@pytest.mark.parametrize(("raw", "message"), [
    ({"every": "daily"}, "digests: name: required"),
    ({"name": "has space"}, "digests: name: required; letters, digits"),
    ({"name": "d", "every": "fortnightly"}, "digest 'd': every: must be \"daily\", \"weekly\" or a duration like"),
    ({"name": "d", "every": "30m"}, "digest 'd': every: must be at least 1h (got '30m')"),
    ({"name": "d", "every": "12h", "at": "08:00"}, "digest 'd': at: only applies to every = \"daily\" or \"weekly\""),
    ({"name": "d", "at": "25:00"}, "digest 'd': at: must be a UTC time like \"08:00\" (got '25:00')"),
    ({"name": "d", "day": "mon"}, "digest 'd': day: only applies to every = \"weekly\""),
    ({"name": "d", "every": "weekly", "day": "someday"}, "digest 'd': day: must be a weekday"),
    ({"name": "d", "gpus": ["H100", "NoSuchGPU"]}, "digest 'd': gpus: 'NoSuchGPU' matches no GPU in the catalog"),
    ({"name": "d", "gpu": "H100"}, "digest 'd': unknown key 'gpu' (did you mean 'gpus'?)"),
    ({"name": "d", "kinds": ["cheap"]}, "digest 'd': kinds: 'cheap' is not one of"),
    ({"name": "d", "enabled": "yes"}, "digest 'd': enabled: must be true or false"),
    ({"name": "d", "webhook_secret_env": "not a name"}, "digest 'd': webhook_secret_env: must be the name"),
    ({"name": "d", "notify": [f"nope://{TOKEN}"]}, "digest 'd': notify[0]: Apprise does not accept this nope:// URL"),
    ({"name": "d", "notify": []}, "digest 'd': notify: must be a list of channel URLs"),
])
def test_bad_digests_name_the_key_and_never_a_url(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_digest(raw)
    assert str(err.value).startswith(message), str(err.value)
    assert TOKEN not in str(err.value)


def test_config_check_and_show_cover_digests(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[delivery]\nallow_hosts = ["127.0.0.1"]\n\n'
        '[[digests]]\nname = "a"\nevery = "fortnightly"\n\n'
        f'[[digests]]\nname = "b"\nnotify = ["nope://{TOKEN}"]\n\n'
        f'[[digests]]\nname = "c"\nnotify = ["json://127.0.0.1:9999/{TOKEN}"]\n\n'
        '[[digests]]\nname = "c"\n'
    )
    report = check_file(config, environ={})
    assert not report.ok
    assert report.errors == [
        "digest 'a': every: must be \"daily\", \"weekly\" or a duration like \"12h\" or \"3d\" (got 'fortnightly')",
        "digest 'b': notify[0]: Apprise does not accept this nope:// URL",
        "digest 'c': name: used by more than one digest (digests[2] and digests[3])",
    ]
    assert any("gpus not set and no [[alerts]] rules" in w for w in report.warnings)
    shown = json.dumps(masked_settings(load_settings(config)))
    assert TOKEN not in shown and "json://127.0.0.1:9999/***" in shown

    config.write_text('[[digests]]\nname = "ok"\ngpus = ["H100"]\nat = "08:00"\n')
    report = check_file(config, environ={})
    assert report.ok and report.errors == [] and not any("digest" in w for w in report.warnings)


# --- timing --------------------------------------------------------------------------------


def test_due_and_not_due_with_an_injected_clock(engine: Engine, receiver: Receiver) -> None:
    s = settings(morning(receiver))
    Market(engine, s).collect(p1=[h100("a", 2.5)])
    d0 = midnight()

    [first] = run(engine, s, now=d0 + 7 * H)  # first seen: scheduled for the next slot, nothing sent
    assert (first.status, first.next_due) == ("scheduled", d0 + 8 * H)
    assert [st.created_at for st in states(engine)] == [d0 + 7 * H]
    assert run(engine, s, now=d0 + 7 * H + timedelta(minutes=59))[0].status == "not due"
    assert receiver.requests == [] and events(engine) == []

    sent = run(engine, s, now=d0 + 8 * H + timedelta(minutes=5))[0]
    assert (sent.status, sent.next_due) == ("sent", d0 + DAY + 8 * H)
    assert [(d.rule, d.kind, d.status) for d in sent.deliveries] == [("digest:morning", "digest", "delivered")]
    for later in (d0 + 8 * H + timedelta(minutes=30), d0 + DAY + 7 * H):
        assert run(engine, s, now=later)[0].status == "not due"
    assert len(receiver.requests) == 1

    # the scheduler was down for two slots: one digest, not two
    assert run(engine, s, now=d0 + 3 * DAY + 9 * H)[0].status == "sent"
    assert run(engine, s, now=d0 + 3 * DAY + 10 * H)[0].status == "not due"
    assert len(receiver.requests) == 2 and [e.kind for e in events(engine)] == ["digest", "digest"]


def test_a_disabled_digest_is_not_sent_and_the_cheap_path_touches_nothing(engine: Engine, receiver: Receiver) -> None:
    s = settings(morning(receiver, enabled=False))
    Market(engine, s).collect(p1=[h100("a", 2.5)])
    assert [r.status for r in run(engine, s, now=midnight() + 9 * H)] == ["disabled"]
    assert states(engine) == [] and receiver.requests == []
    assert run(engine, settings()) == []  # no digests: no query at all


# --- content -------------------------------------------------------------------------------


def test_best_price_per_gpu_and_changes_since_the_last_digest(engine: Engine, receiver: Receiver) -> None:
    s = settings(morning(receiver, gpus=["H100", "A100-SXM-80GB", "L4", "RTX-4090"]),
                 web={"base_url": "https://gpu.example.org/"})
    market = Market(engine, s)
    d0 = midnight()
    market.collect(
        p1=[h100("a", 2.5), gpu("b", "A100 80GB", 1.2), gpu("l4", "L4", 0.5), h100("spot", 1.0, kind="spot")],
        p2=[h100("c", 2.2, region="eu"), gpu("d", "H100 PCIe", 2.3)],
    )
    [first] = run(engine, s, now=d0 + 8 * H, force=True)
    assert first.status == "sent" and first.title == f"gpu-tracker digest morning: 4 GPU(s) on {d0:%Y-%m-%d}"
    assert first.message == "\n".join([
        f"Digest morning (daily at 08:00 UTC), {d0:%Y-%m-%d} 08:00 UTC: the best current price per GPU-hour "
        "of on-demand and community offers. This is the first digest: nothing to compare yet.",
        # the spot bid at 1.0 is not an on-demand or community price; every H100 variant counts
        "H100: 2.20 USD/GPU-h at p2 / eu / on-demand (1x H100-SXM, c). https://gpu.example.org/gpu/H100",
        "A100-SXM-80GB: 1.20 USD/GPU-h at p1 / r1 / on-demand (1x A100-SXM-80GB, b). "
        "https://gpu.example.org/gpu/A100-SXM-80GB",
        "L4: 0.50 USD/GPU-h at p1 / r1 / on-demand (1x L4, l4). https://gpu.example.org/gpu/L4",
        "RTX-4090: no current offer. https://gpu.example.org/gpu/RTX-4090",
    ])

    # a day later: p2 fails (its 2.20 must not count), p1 has a cheaper H100, a dearer A100, no
    # L4 any more, a new RTX 4090, and prices the validation quarantines (0 and negative)
    market.collect(
        p1=[h100("a", 2.4), h100("a2", 1.9), h100("zero", 0.0), h100("neg", -3.0), gpu("b", "A100 80GB", 1.3),
            gpu("r", "RTX 4090", 0.4)],
        p2=500,
    )
    assert run(engine, s, now=d0 + DAY + 7 * H)[0].status == "not due"
    [second] = run(engine, s, now=d0 + DAY + 8 * H + timedelta(minutes=5))
    assert second.status == "sent"
    assert second.title == f"gpu-tracker digest morning: 4 GPU(s) on {d0 + DAY:%Y-%m-%d}, 1 down, 1 up"
    lines = (second.message or "").splitlines()
    assert lines[0].endswith(f"and its change since the previous digest ({d0:%Y-%m-%d} 08:00 UTC).")
    assert lines[1:] == [
        "H100: 1.90 USD/GPU-h at p1 / r1 / on-demand (1x H100-SXM, a2); down 0.30 (-13.6%) from 2.20 "
        "(previously at p2 / eu / on-demand). https://gpu.example.org/gpu/H100",
        "A100-SXM-80GB: 1.30 USD/GPU-h at p1 / r1 / on-demand (1x A100-SXM-80GB, b); up 0.10 (+8.3%) from 1.20. "
        "https://gpu.example.org/gpu/A100-SXM-80GB",
        "L4: no current offer (was 0.50 USD/GPU-h at p1 / r1 / on-demand). https://gpu.example.org/gpu/L4",
        "RTX-4090: 0.40 USD/GPU-h at p1 / r1 / on-demand (1x RTX-4090, r); new since the last digest. "
        "https://gpu.example.org/gpu/RTX-4090",
        "Not counted (latest scrape failed): p2.",
    ]

    # what the webhook received: the same digest, as JSON, once each
    assert [b["kind"] for b in receiver.bodies()] == ["digest", "digest"]
    body = receiver.bodies()[1]
    assert body["digest"] == "morning" and body["rule"] == "digest:morning" and body["schedule"] == "daily at 08:00 UTC"
    by_gpu = {g["gpu"]: g for g in body["gpus"]}
    assert {k: g["status"] for k, g in by_gpu.items()} == {"H100": "down", "A100-SXM-80GB": "up", "L4": "gone",
                                                           "RTX-4090": "new"}
    h = by_gpu["H100"]
    assert h["price_per_gpu_hour"] == 1.9 and h["previous_price_per_gpu_hour"] == 2.2
    assert h["change"] == pytest.approx(-0.3) and h["change_pct"] == pytest.approx(-13.636, abs=1e-3)
    assert h["offer"]["provider"] == "p1" and h["offer"]["sku"] == "a2" and h["previous_offer"]["provider"] == "p2"
    assert h["providers"] == ["p1"] and set(h["gpu_ids"]) >= {"H100-SXM", "H100-PCIe"}
    assert body["providers_not_counted"] == ["p2"] and body["previous_digest_at"] == (d0 + 8 * H).isoformat()
    assert body["event_id"] == int(receiver.requests[1].headers["x-gpu-tracker-event"])

    # a third digest with nothing changed says so
    market.collect(p1=[h100("a", 2.4), h100("a2", 1.9), gpu("b", "A100 80GB", 1.3), gpu("r", "RTX 4090", 0.4)],
                   p2=500)
    [third] = run(engine, s, now=d0 + 2 * DAY + 8 * H)
    assert third.title == f"gpu-tracker digest morning: 4 GPU(s) on {d0 + 2 * DAY:%Y-%m-%d}"
    assert "H100: 1.90 USD/GPU-h at p1 / r1 / on-demand (1x H100-SXM, a2); unchanged." in (third.message or "")
    assert "L4: no current offer." in (third.message or "")


def test_default_gpus_are_the_alert_rules_and_apprise_json_delivers(engine: Engine, receiver: Receiver) -> None:
    rules = ({"name": "h100-under-2", "gpu": "H100", "below": 2.0},
             {"name": "cheap", "gpu": ["A100-SXM-80GB", "h100"], "below": 1.0})
    s = settings({"name": "weekly", "every": "weekly", "notify": [receiver.url("json", "apprise/digest")]}, rules=rules)
    Market(engine, s).collect(p1=[h100("a", 2.5), gpu("b", "A100 80GB", 1.2)])
    [r] = run(engine, s, now=midnight() + 9 * H, force=True)
    assert [(d.channel, d.status) for d in r.deliveries] == [(f"json://127.0.0.1:{receiver.port}/***", "delivered")]
    assert [g["gpu"] for g in r.details["gpus"]] == ["H100", "A100-SXM-80GB"]  # "h100" is the same entry
    [req] = receiver.requests
    body = req.json()
    assert req.path == "/apprise/digest" and body["title"] == r.title
    assert "H100: 2.50 USD/GPU-h at p1 / r1 / on-demand (1x H100-SXM, a)." in body["message"]
    assert "A100-SXM-80GB: 1.20 USD/GPU-h" in body["message"]


# --- delivery: retries and never twice -----------------------------------------------------


def test_a_500_is_retried_and_a_restart_never_sends_it_twice(db_url: str, receiver: Receiver) -> None:
    receiver.codes = [500]
    env = {"DIGEST_HMAC": SECRET}
    s = settings(morning(receiver, webhook_secret_env="DIGEST_HMAC"))
    d0 = midnight()

    eng = make_engine(db_url)
    init_db(eng)
    market = Market(eng, s)
    assert market.cycle(now=d0 + 7 * H, environ=env, p1=[h100("a", 2.5)]).digests[0].status == "scheduled"
    cycle = market.cycle(now=d0 + 8 * H + timedelta(minutes=5), environ=env, p1=[h100("a", 2.5)])
    assert [r.status for r in cycle.digests] == ["sent"]
    assert [(d.rule, d.kind, d.status, d.attempts, d.error) for d in cycle.deliveries] == [
        ("digest:morning", "digest", "pending", 1, "HTTP 500 Internal Server Error")]
    # before the backoff is over: nothing is sent, and the digest is not composed again
    again = market.cycle(now=d0 + 8 * H + timedelta(minutes=5, seconds=10), environ=env, p1=[h100("a", 2.5)])
    assert again.deliveries == () and again.digests[0].status == "not due"
    assert len(receiver.requests) == 1
    eng.dispose()

    # a restart (a new process on the same database): the pending delivery goes out once, by the outbox
    eng = make_engine(db_url)
    init_db(eng)
    market = Market(eng, s)
    retried = market.cycle(now=d0 + 8 * H + timedelta(minutes=10), environ=env, p1=[h100("a", 2.4)])
    assert [(d.rule, d.status, d.attempts) for d in retried.deliveries] == [("digest:morning", "delivered", 2)]
    assert retried.digests[0].status == "not due"
    for later in (d0 + 9 * H, d0 + 20 * H):
        assert market.cycle(now=later, environ=env, p1=[h100("a", 2.4)]).deliveries == ()
    assert deliver_pending(eng, s, now=d0 + DAY, environ=env) == []

    assert len(receiver.requests) == 2
    a, b = receiver.requests
    assert a.body == b.body and a.headers["x-gpu-tracker-event"] == b.headers["x-gpu-tracker-event"]
    for r in (a, b):
        expected = "sha256=" + hmac.new(SECRET.encode(), r.body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(r.headers[SIGNATURE_HEADER.lower()], expected)
    with engine_reader(eng) as reader:
        [entry] = history(reader, rule="digest:morning")
    assert entry["kind"] == "digest" and entry["delivered"] == "1/1" and entry["deliveries"][0]["attempts"] == 2
    [row] = outbox(eng)
    assert row.status == "delivered" and row.rule == "digest:morning"
    [st] = states(eng)
    assert st.last_sent_at == d0 + 8 * H + timedelta(minutes=5) and st.last_values["H100"]["price"] == 2.5
    eng.dispose()


def test_a_second_sender_with_an_old_state_sends_nothing(engine: Engine, receiver: Receiver,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings(morning(receiver))
    Market(engine, s).collect(p1=[h100("a", 2.5)])
    d0 = midnight()
    run(engine, s, now=d0 + 7 * H)
    seen_before = digest_mod._states(engine, ["morning"])  # what a second process read, before the first sent
    assert run(engine, s, now=d0 + 8 * H)[0].status == "sent"
    monkeypatch.setattr(digest_mod, "_states", lambda _engine, _names: seen_before)
    [late] = run(engine, s, now=d0 + 8 * H + timedelta(seconds=1))
    assert late.status == "concurrent" and late.deliveries == ()
    assert len(events(engine)) == 1 and len(outbox(engine)) == 1 and len(receiver.requests) == 1


def test_a_bad_digest_does_not_stop_the_rules_nor_a_bad_rule_the_digests(engine: Engine, receiver: Receiver) -> None:
    rule = {"name": "h100-under-2", "gpu": "H100", "below": 2.0, "notify": [receiver.url("webhook+http", "rule")]}
    s = settings({"name": "bad", "every": "fortnightly"}, rules=(rule,))
    Market(engine, s).collect(p1=[h100("a", 1.9)])
    cycle = after_collect(engine, s, [])
    assert cycle.fired == ["h100-under-2"] and [d.status for d in cycle.deliveries] == ["delivered"]
    assert (cycle.error or "").startswith("digests: digest 'bad': every:")

    broken_rule = {"name": "broken", "gpu": "NoSuchGPU", "below": 1.0}
    s = settings(morning(receiver), rules=(broken_rule,))
    cycle = after_collect(engine, s, [], now=midnight() + 9 * H)
    assert "NoSuchGPU" in (cycle.error or "") and [r.status for r in cycle.digests] == ["scheduled"]


# --- CLI -----------------------------------------------------------------------------------

runner = CliRunner()


def test_alerts_digest_command(tmp_path: Path, receiver: Receiver) -> None:
    db = f"sqlite:///{tmp_path / 'tracker.db'}"
    config = tmp_path / "config.toml"
    hook = receiver.url("webhook+http", TOKEN)
    config.write_text('[delivery]\nallow_hosts = ["127.0.0.1"]\n\n'
                      f'[[digests]]\nname = "morning"\nat = "08:00"\ngpus = ["H100"]\nnotify = ["{hook}"]\n\n'
                      '[[digests]]\nname = "weekly"\nevery = "weekly"\ngpus = ["A100-SXM-80GB"]\nnotify = ["log"]\n')
    engine = make_engine(db)
    init_db(engine)
    Market(engine, settings()).collect(p1=[h100("a", 1.9), gpu("b", "A100 80GB", 1.2)])
    engine.dispose()

    code, out = cli(db, config, "alerts", "digest", "--dry-run")
    assert code == 0 and "gpu-tracker digest morning: 1 GPU(s)" in out
    assert "H100: 1.90 USD/GPU-h at p1 / r1 / on-demand (1x H100-SXM, a)" in out and "A100-SXM-80GB: 1.20" in out
    assert receiver.requests == [] and TOKEN not in out

    code, out = cli(db, config, "alerts", "digest", "--format", "json")  # first run: both scheduled
    assert code == 0 and {r["digest"]: r["status"] for r in json.loads(out)} == {"morning": "scheduled",
                                                                                  "weekly": "scheduled"}
    code, out = cli(db, config, "alerts", "digest", "--name", "morning", "--now", "--format", "json")
    [row] = json.loads(out)
    assert code == 0 and row["status"] == "sent" and row["deliveries"][0]["status"] == "delivered"
    assert TOKEN not in out and row["deliveries"][0]["channel"] == f"webhook+http://127.0.0.1:{receiver.port}/***"
    assert len(receiver.requests) == 1 and receiver.bodies()[0]["digest"] == "morning"

    code, out = cli(db, config, "alerts", "digest")
    assert code == 0 and "not due" in out and len(receiver.requests) == 1
    code, out = cli(db, config, "alerts", "history", "--rule", "digest:morning", "--format", "json")
    assert code == 0 and [e["kind"] for e in json.loads(out)] == ["digest"]
    code, out = cli(db, config, "alerts", "digest", "--name", "nope")
    assert code == 2 and "no digest named 'nope'" in out
