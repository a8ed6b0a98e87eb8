"""The alerts page and its JSON: rules with their state and since when, firings and
resolutions, deliveries (sent, pending with a reason, failed), never a channel's secret.
Driven through the real pipeline, rules and outbox on both backends."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from tests.alerts.helpers import Receiver
from tests.web.conftest import (
    DEAD_SECRET,
    HOOK_SECRET,
    TestClient,
    alert_scenario,
    get_json,
)
from tracker.config.settings import Settings


@pytest.fixture
def alerts_client(engine: Engine, receiver: Receiver) -> Iterator[TestClient]:
    from tracker.web import create_app

    settings = alert_scenario(engine, receiver)
    with TestClient(create_app(settings, engine), base_url="http://127.0.0.1") as c:
        yield c


def _rows(html: str, table: str) -> list[str]:
    body = html[html.index(f'id="{table}"'):]
    body = body[:body.index("</table>")]
    return re.findall(r"<tr class=\"[^\"]*\"[^>]*>(.*?)</tr>", body, re.S)


def test_alerts_api_states_events_and_deliveries(alerts_client: TestClient, receiver: Receiver) -> None:
    rules = {r["name"]: r for r in get_json(alerts_client, "/api/alerts")}
    assert [rules[n]["state"] for n in ("h100-under-2", "h100-dead-hook", "a100-under-1")] == ["firing"] * 2 + ["armed"]
    firing = rules["h100-under-2"]
    assert firing["since"] == firing["last_fired"] and firing["last_resolved"] < firing["last_fired"]
    assert rules["a100-under-1"]["since"] is None and rules["a100-under-1"]["last_fired"] is None

    events = get_json(alerts_client, "/api/alerts/history?rule=h100-under-2")
    assert [e["kind"] for e in events] == ["fired", "resolved", "fired"]  # newest first
    assert [e["delivered"] for e in events] == ["1/1"] * 3
    assert len(receiver.requests) == 3  # each message was really sent once

    out = get_json(alerts_client, "/api/alerts/deliveries")
    assert out["counts"] == {"pending": 3, "delivered": 3, "failed": 1, "orphaned": 0}
    dead = [d for d in out["deliveries"] if d["rule"] == "h100-dead-hook"]
    assert [d["event_kind"] for d in dead] == ["test", "fired", "resolved", "fired"]
    assert [d["status"] for d in dead] == ["failed", "pending", "pending", "pending"]
    assert all(d["last_error"] and d["channel"].startswith("json://127.0.0.1:") for d in dead)
    assert all(d["next_attempt_at"] for d in dead[1:]) and dead[0]["next_attempt_at"] is None
    sent = [d for d in out["deliveries"] if d["status"] == "delivered"]
    assert {d["rule"] for d in sent} == {"h100-under-2"} and all(d["delivered_at"] for d in sent)

    failed = get_json(alerts_client, "/api/alerts/deliveries?status=failed")
    assert [(d["rule"], d["event_kind"]) for d in failed["deliveries"]] == [("h100-dead-hook", "test")]
    assert len(get_json(alerts_client, "/api/alerts/deliveries?limit=2")["deliveries"]) == 2
    bad = get_json(alerts_client, "/api/alerts/deliveries?status=lost", status=400)
    assert bad["detail"].startswith("status: lost is not one of")

    for url in ("/api/alerts", "/api/alerts/history", "/api/alerts/deliveries"):
        text = alerts_client.get(url).text
        assert HOOK_SECRET not in text and DEAD_SECRET not in text, url


def test_alerts_page_shows_state_firings_and_deliveries(alerts_client: TestClient) -> None:
    r = alerts_client.get("/alerts")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    assert HOOK_SECRET not in html and DEAD_SECRET not in html
    assert 'href="/alerts" class="active"' in html  # linked from the nav
    assert "3 rules" in html and "2 firing" in html and "3 sent, 3 pending" in html and "1 failed" in html

    rules = {re.search(r"<strong>([^<]+)</strong>", row).group(1): row for row in _rows(html, "rules")}  # type: ignore[union-attr]
    assert "state-firing" in rules["h100-under-2"] and " ago</span>" in rules["h100-under-2"]
    assert "state-armed" in rules["a100-under-1"] and "never fired" in rules["a100-under-1"]
    assert "H100 price below 2" in rules["h100-under-2"] or "below 2" in rules["h100-under-2"]

    events = _rows(html, "events")
    assert len(events) == 7  # 3 + 3 fired/resolved and one test message
    assert sum("kind-resolved" in e for e in events) == 2 and sum("kind-fired" in e for e in events) == 4

    deliveries = _rows(html, "deliveries")
    assert len(deliveries) == 7
    assert sum("delivery-status-delivered" in d for d in deliveries) == 3
    failed = [d for d in deliveries if "delivery-status-failed" in d]
    assert len(failed) == 1 and re.search(r'class="note reason">\S', failed[0])
    pending = [d for d in deliveries if "delivery-status-pending" in d]
    assert len(pending) == 3 and all("next " in d for d in pending)
    assert "json://127.0.0.1:" in html  # the channel is shown, redacted


def test_alerts_page_without_rules_or_events_says_how_to_add_one(engine: Engine) -> None:
    from tracker.web import create_app

    with TestClient(create_app(Settings(database=engine.url.render_as_string(hide_password=False)), engine),
                    base_url="http://127.0.0.1") as c:
        html = c.get("/alerts").text
    assert "No alert rules yet" in html and "gpu-tracker alerts add" in html
    assert "No rule has fired yet" in html and "Nothing has been sent yet" in html


def test_a_broken_rule_is_reported_and_history_still_shown(engine: Engine, receiver: Receiver) -> None:
    from tracker.web import create_app

    settings = alert_scenario(engine, receiver)
    broken = settings.model_copy(update={"alerts": [*settings.alerts, {"name": "oops", "gpu": "H100"}]})
    with TestClient(create_app(broken, engine), base_url="http://127.0.0.1") as c:
        html = c.get("/alerts").text
        assert get_json(c, "/api/alerts", status=400)["detail"].startswith("alert rule")
    assert 'id="rules-error"' in html and "oops" in html
    assert len(_rows(html, "events")) == 7 and len(_rows(html, "deliveries")) == 7
