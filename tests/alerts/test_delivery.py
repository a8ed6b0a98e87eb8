"""Delivery through the outbox to real local endpoints (127.0.0.1 only): a JSON webhook that
answers 500 then 200 (HMAC checked by the receiver), Apprise ``json://`` end to end, retries,
claims, orphaned channels, test messages, and secrets kept out of everything stored or logged."""

from __future__ import annotations

import hashlib
import hmac
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db.engine import engine_reader
from db.models import Outbox
from db.reader import in_transaction
from db.spans import utcnow
from tests.alerts.helpers import Market, Receiver, events, fast_settings, h100, outbox
from tracker.alerts import (
    after_collect,
    deliver_pending,
    history,
    load_rules,
    send_test,
)
from tracker.alerts.channels import SIGNATURE_HEADER
from tracker.alerts.deliver import claim
from tracker.alerts.evaluate import evaluate
from tracker.config.settings import load_settings

SECRET = "hmac-s3cret-value"


def webhook_rule(receiver: Receiver, **kw: object) -> dict[str, object]:
    return {"name": "h100-under-2", "gpu": "H100", "below": 2.0, "notify": [receiver.url("webhook+http")],
            "webhook_secret_env": "ALERT_HMAC", **kw}


def test_webhook_500_then_200_is_retried_with_backoff_and_sent_once(engine: Engine, receiver: Receiver) -> None:
    receiver.codes = [500]
    env = {"ALERT_HMAC": SECRET}
    market = Market(engine, fast_settings(webhook_rule(receiver)))
    market.cycle(environ=env, p1=[h100("a", 2.5)])
    t0 = utcnow()
    first = market.cycle(environ=env, p1=[h100("a", 1.9)])
    assert [(d.status, d.attempts, d.error) for d in first.deliveries] == [("pending", 1, "HTTP 500 Internal Server Error")]
    [row] = outbox(engine)
    assert row.status == "pending" and row.delivered_at is None and row.last_error == "HTTP 500 Internal Server Error"
    assert timedelta(seconds=25) < row.next_attempt_at - t0 < timedelta(seconds=40)

    # a cycle before the backoff is over sends nothing
    assert deliver_pending(engine, market.settings, now=t0 + timedelta(seconds=5), environ=env) == []
    assert len(receiver.requests) == 1
    # the next cycle after it delivers, exactly once
    second = deliver_pending(engine, market.settings, now=t0 + timedelta(seconds=45), environ=env)
    assert [(d.status, d.attempts) for d in second] == [("delivered", 2)]
    assert deliver_pending(engine, market.settings, now=t0 + timedelta(hours=2), environ=env) == []
    market.cycle(environ=env, p1=[h100("a", 1.8)])
    assert len(receiver.requests) == 2

    a, b = receiver.requests
    assert a.body == b.body and a.headers["x-gpu-tracker-event"] == b.headers["x-gpu-tracker-event"]
    for r in (a, b):
        expected = "sha256=" + hmac.new(SECRET.encode(), r.body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(r.headers[SIGNATURE_HEADER.lower()], expected)
        assert r.headers["content-type"] == "application/json"
    body = a.json()
    assert body["kind"] == "fired" and body["rule"] == "h100-under-2" and body["value"] == 1.9
    assert body["event_id"] == int(a.headers["x-gpu-tracker-event"])
    [row] = outbox(engine)
    assert row.status == "delivered" and row.attempts == 2 and row.last_error is None
    with engine_reader(engine) as reader:
        [entry] = history(reader)
    assert entry["delivered"] == "1/1" and entry["deliveries"][0]["attempts"] == 2


def test_missing_signing_secret_is_a_retryable_failure(engine: Engine, receiver: Receiver) -> None:
    market = Market(engine, fast_settings(webhook_rule(receiver)))
    cycle = market.cycle(environ={}, p1=[h100("a", 1.9)])
    assert [(d.status, d.error) for d in cycle.deliveries] == [("pending", "set ALERT_HMAC to the webhook signing secret")]
    assert receiver.requests == []
    later = deliver_pending(engine, market.settings, now=utcnow() + timedelta(minutes=1), environ={"ALERT_HMAC": SECRET})
    assert [d.status for d in later] == ["delivered"] and len(receiver.requests) == 1


def test_apprise_json_delivery_end_to_end(engine: Engine, receiver: Receiver) -> None:
    receiver.codes = [500]
    settings = fast_settings(
        {"name": "h100-apprise", "gpu": "H100", "below": 2.0, "notify": [receiver.url("json", "apprise/in")]},
        web={"base_url": "https://gpu.example.org/"},
    )
    market = Market(engine, settings)
    market.cycle(p1=[h100("a", 2.5)])
    cycle = market.cycle(p1=[h100("a", 1.9), h100("b", 2.2)])
    [failed] = cycle.deliveries
    assert failed.status == "pending" and "500" in (failed.error or "")
    [done] = deliver_pending(engine, settings, now=utcnow() + timedelta(minutes=1))
    assert done.status == "delivered"
    assert len(receiver.requests) == 2 and {r.path for r in receiver.requests} == {"/apprise/in"}
    body = receiver.requests[1].json()
    assert body["version"] == "1.0" and body["type"] == "info"
    assert body["title"] == "gpu-tracker: h100-apprise fired: H100 1.90 USD/GPU-h"
    msg = body["message"]
    assert "Rule h100-apprise fired" in msg and "below the threshold 2.00" in msg
    assert "p1 / r1 / on-demand: 1x H100-SXM (a) at 1.9 USD/GPU-h" in msg
    assert "previous value: 2.50" in msg and "Offers considered: 2 from 1 provider(s) (p1)" in msg
    assert "Dashboard: https://gpu.example.org/gpu/H100-SXM" in msg


def test_two_senders_never_send_the_same_row(engine: Engine, receiver: Receiver) -> None:
    settings = fast_settings(webhook_rule(receiver, webhook_secret_env=None))
    market = Market(engine, settings)
    market.collect(p1=[h100("a", 1.9)])
    evaluate(engine, settings)
    [row] = outbox(engine)
    assert row.id is not None
    now = utcnow()
    assert claim(engine, row.id, now) is True
    assert claim(engine, row.id, now) is False  # held by the first sender
    assert deliver_pending(engine, settings, now=now) == []  # so the scheduler skips it too
    assert receiver.requests == []
    # a sender that died: its claim runs out and the row is sent by the next cycle
    assert [d.status for d in deliver_pending(engine, settings, now=now + timedelta(minutes=10))] == ["delivered"]
    assert len(receiver.requests) == 1


def test_a_removed_channel_makes_the_row_orphaned_not_misrouted(engine: Engine, receiver: Receiver) -> None:
    settings = fast_settings(webhook_rule(receiver, webhook_secret_env=None))
    Market(engine, settings).collect(p1=[h100("a", 1.9)])
    evaluate(engine, settings)
    changed = fast_settings(webhook_rule(receiver, webhook_secret_env=None, notify=["log"]))
    [d] = deliver_pending(engine, changed)
    assert d.status == "orphaned" and "no longer has the channel" in (d.error or "")
    assert receiver.requests == [] and deliver_pending(engine, changed, now=utcnow() + timedelta(days=1)) == []


def test_env_target_and_console_and_log_channels(engine: Engine, receiver: Receiver,
                                                  capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    settings = fast_settings({"name": "multi", "gpu": "H100", "below": 2.0, "notify": ["env:HOOK_URL", "console", "log"]})
    Market(engine, settings).collect(p1=[h100("a", 1.9)])
    with caplog.at_level(logging.WARNING, logger="tracker.alerts.notify"):
        cycle = after_collect(engine, settings, [], environ={})
    assert sorted((d.channel, d.status) for d in cycle.deliveries) == [
        ("console", "delivered"), ("env:HOOK_URL", "pending"), ("log", "delivered")]
    assert "gpu-tracker: multi fired" in capsys.readouterr().out
    assert any("multi fired" in r.getMessage() for r in caplog.records if r.name == "tracker.alerts.notify")
    [pending] = [d for d in cycle.deliveries if d.status == "pending"]
    assert pending.error == "set HOOK_URL to the channel URL"
    later = deliver_pending(engine, settings, now=utcnow() + timedelta(minutes=1),
                            environ={"HOOK_URL": receiver.url("webhook+http")})
    assert [d.status for d in later] == ["delivered"] and receiver.bodies()[0]["rule"] == "multi"


def test_alerts_test_sends_through_every_channel_once(engine: Engine, receiver: Receiver) -> None:
    receiver.codes = [200, 503]
    settings = fast_settings({"name": "t", "gpu": "H100", "below": 2.0,
                              "notify": [receiver.url("webhook+http", "ok"), receiver.url("json", "down")]})
    Market(engine, settings).collect(p1=[h100("a", 2.5)])
    deliveries = send_test(engine, settings, "t")
    assert [(d.channel, d.status) for d in deliveries] == [
        (f"webhook+http://127.0.0.1:{receiver.port}/***", "delivered"), (f"json://127.0.0.1:{receiver.port}/***", "failed")]
    assert receiver.bodies()[0]["kind"] == "test" and "Test message for alert rule t" in receiver.bodies()[0]["message"]
    assert deliver_pending(engine, settings, now=utcnow() + timedelta(hours=1)) == []  # a failed test is not retried
    assert len(receiver.requests) == 2
    assert [e.kind for e in events(engine)] == ["test"]


def test_secrets_stay_out_of_rows_errors_logs_and_history(engine: Engine, receiver: Receiver,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    receiver.codes = [500, 500]
    token, password = "tok-SECRET-9f8e7d", "hunter2pass"
    apprise_url = f"json://alice:{password}@127.0.0.1:{receiver.port}/{token}"
    dead_hook = f"webhook+http://127.0.0.1:1/hooks/{token}?key={password}"
    settings = fast_settings({"name": "secretive", "gpu": "H100", "below": 2.0, "notify": [apprise_url, dead_hook]})
    caplog.set_level(logging.DEBUG)
    Market(engine, settings).collect(p1=[h100("a", 1.9)])
    cycle = after_collect(engine, settings, [])
    assert [d.status for d in cycle.deliveries] == ["pending", "pending"]
    assert len(receiver.requests) == 1 and receiver.requests[0].path == f"/{token}"  # the real target was used
    with engine_reader(engine) as reader:
        stored = repr(outbox(engine)) + repr(events(engine)) + repr(history(reader)) + repr(cycle)
    with Session(engine) as s:
        stored += repr([vars(r) for r in s.exec(select(Outbox)).all()])
    for secret in (token, password):
        assert secret not in stored
        assert secret not in caplog.text
    channels = [o.channel for o in outbox(engine)]
    assert channels == [f"json://***@127.0.0.1:{receiver.port}/***", "webhook+http://127.0.0.1:1/***?***"]
    assert all(o.last_error for o in outbox(engine))


def test_the_smallest_config_rule_works_as_written(tmp_path: Path, engine: Engine) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[delivery]\nallow_hosts = ["127.0.0.1"]\n\n'
        '[[alerts]]\nname = "h100-under-2"\ngpu = "H100"\nbelow = 2.0\n'
        'notify = ["json://127.0.0.1:9999/hook", "mailto://user:pass@example.com"]\n'
    )
    settings = load_settings(config)
    with Session(engine) as s:
        [rule] = load_rules(settings, in_transaction(s.connection()))
    assert rule.gpus and all(g.startswith("H100") for g in rule.gpus)
    assert rule.channels == ["json://127.0.0.1:9999/***", "mailto://***@example.com"]
    Market(engine, settings).collect(p1=[h100("a", 1.9)])
    # evaluate only: delivering would try example.com's mail server
    [ev] = evaluate(engine, settings)
    assert ev.events == ("fired",)
    assert [(o.channel, o.status) for o in outbox(engine)] == [
        ("json://127.0.0.1:9999/***", "pending"), ("mailto://***@example.com", "pending")]
