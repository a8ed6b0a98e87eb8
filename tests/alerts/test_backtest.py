"""``alerts backtest``: a stored history whose crossings are known, firings counted exactly,
through the scheduler's own evaluation code; nothing stored, nothing sent."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from db import labels, reads
from db.engine import session_scope
from db.models import AlertEvent, AlertRule, AlertState, Outbox, ScrapeRun
from db.reader import in_transaction
from tests.analysis.seq import HOUR, T0, offer
from tracker.alerts.backtest import backtest
from tracker.alerts.rules import parse_rule
from tracker.cli import app
from tracker.config.settings import Settings
from tracker.errors import ConfigError
from tracker.pipeline import store as store_stage

SETTINGS = Settings(delivery={"allow_hosts": ["127.0.0.1"]})


def collect(engine: Engine, prices: list[float | None], provider: str = "alpha") -> list[datetime]:
    """One hourly collection per price (``None``: the offer is not listed), each with its scrape_run row,
    as the collector writes them. Returns the collection times."""
    times = []
    for i, price in enumerate(prices):
        at = T0 + i * HOUR
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, provider)
            listed = [offer(provider, "a1", price)] if price is not None else []
            store_stage.store_observation(s, provider, listed, at, prov.last_attempt_at)
            prov.last_attempt_at = prov.last_success_at = at
            prov.last_status = "ok"
            s.add(ScrapeRun(provider=provider, started_at=at, finished_at=at, status="ok"))
        times.append(at)
    return times


def rule(**table: object):  # type: ignore[no-untyped-def]
    return parse_rule({"name": "bt", "gpu": "H100", **table}, where="test", allow_hosts=["127.0.0.1"])


def run(engine: Engine, times: list[datetime], **table: object):  # type: ignore[no-untyped-def]
    return backtest(engine, SETTINGS, rule(**table), since=times[0], until=times[-1] + HOUR)


def fired_at(result) -> list[datetime]:  # type: ignore[no-untyped-def]
    return [e.time for e in result.events if e.event == "fired"]


def test_below_fires_at_each_crossing_and_resolves(engine: Engine) -> None:
    t = collect(engine, [3.0, 1.8, 1.7, 2.5, 1.9, 1.5, 2.2, 2.05, 1.95, 3.0])
    result = run(engine, t, below=2.0, resolved=True)
    assert result.evaluations == 10
    assert fired_at(result) == [t[1], t[4], t[8]]
    assert [e.time for e in result.events if e.event == "resolved"] == [t[3], t[6], t[9]]
    first = result.events[0]
    assert (first.value, first.provider, first.threshold, first.offers) == (1.8, "alpha", 2.0, 1)
    assert result.firing_s == (2 + 2 + 1) * 3600 and not result.firing_at_end


def test_rearm_margin_holds_the_rule_until_the_price_is_clear(engine: Engine) -> None:
    t = collect(engine, [3.0, 1.9, 2.05, 1.95, 2.2, 1.9])
    assert fired_at(run(engine, t, below=2.0)) == [t[1], t[3], t[5]]
    with_margin = run(engine, t, below=2.0, rearm=0.1)
    assert fired_at(with_margin) == [t[1], t[5]]
    assert with_margin.firing_at_end  # fired at t5 and still below at the end of the range
    assert with_margin.firing_s == 3 * 3600  # t1 to the re-arm at t4; from t5 on, nothing is known past t5


def test_for_counts_every_collection_even_at_an_unchanged_price(engine: Engine) -> None:
    # 1.9 twice in a row is one stored interval; the two collections still count twice
    t = collect(engine, [3.0, 1.9, 1.9, 2.2, 1.9, 2.5, 1.8, 1.7, 1.6])
    result = run(engine, t, below=2.0, **{"for": 2})
    assert fired_at(result) == [t[2], t[7]]
    assert run(engine, t, below=2.0, **{"for": 3}).fired == 1


def test_a_gap_is_not_a_price(engine: Engine) -> None:
    """The offer missing from one collection: the rule sees no value then, and the state holds."""
    t = collect(engine, [3.0, 1.9, None, 1.9, 2.5])
    result = run(engine, t, below=2.0, resolved=True)
    assert fired_at(result) == [t[1]]
    assert [e.time for e in result.events if e.event == "resolved"] == [t[4]]


def test_resolutions_are_counted_without_resolved_and_gaps_are_not_time_firing(engine: Engine) -> None:
    """A rule that sends no "resolved" message still shows when it resolved; the hours with no price
    in effect (the offer missing from two collections) are not counted as firing."""
    t = collect(engine, [3.0, 1.9, None, None, 1.9, 2.5])
    result = run(engine, t, below=2.0)
    assert [(e.event, e.time) for e in result.events] == [("fired", t[1]), ("resolved", t[5])]
    assert result.resolved == 1
    assert result.firing_s == 2 * 3600, "t1 to t2 and t4 to t5: t2 to t4 had no data"
    assert not result.firing_at_end


def test_new_low_and_above(engine: Engine) -> None:
    t = collect(engine, [3.0, 2.8, 2.9, 2.7, 2.7, 3.5, 2.6])
    assert fired_at(run(engine, t, new_low=True)) == [t[1], t[3], t[6]]
    assert fired_at(run(engine, t, above=3.2)) == [t[5]]


def test_nothing_is_stored_or_sent(engine: Engine) -> None:
    t = collect(engine, [3.0, 1.8, 2.5, 1.9])
    with session_scope(engine) as s:
        s.add(AlertRule(name="cheap", definition={"name": "cheap", "gpu": "H100", "below": 2.0,
                                                  "notify": ["json://127.0.0.1:9/hook"]}))

    def counts() -> tuple[int, ...]:
        with Session(engine) as s:
            return tuple(s.exec(select(func.count()).select_from(m)).one() for m in (AlertState, AlertEvent, Outbox))

    before = counts()
    result = backtest(engine, SETTINGS, rule(below=2.0, notify=["json://127.0.0.1:9/hook"]), since=t[0], until=t[-1])
    assert result.fired == 2
    assert counts() == before == (0, 0, 0)


def test_a_bad_range_is_one_clear_error(engine: Engine) -> None:
    with pytest.raises(ConfigError, match="starts"):
        backtest(engine, SETTINGS, rule(below=2.0), since=T0, until=T0 - timedelta(days=1))


def test_the_command_by_name_and_inline(sqlite_engine: Engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = collect(sqlite_engine, [3.0, 1.8, 2.5, 1.9])
    url = sqlite_engine.url.render_as_string(hide_password=False)
    config = tmp_path / "config.toml"
    config.write_text('[[alerts]]\nname = "cheap"\ngpu = "H100"\nbelow = 2.0\nnotify = ["log"]\n')
    span = ["--since", t[0].isoformat(), "--until", (t[-1] + HOUR).isoformat(), "--format", "json"]
    by_name = CliRunner().invoke(app, ["--db", url, "--config", str(config), "alerts", "backtest", "cheap", *span])
    assert by_name.exit_code == 0, by_name.output
    inline = CliRunner().invoke(app, ["--db", url, "alerts", "backtest", "--gpu", "H100", "--below", "2.0", *span])
    assert inline.exit_code == 0, inline.output
    a, b = json.loads(by_name.stdout), json.loads(inline.stdout)
    assert a["fired"] == b["fired"] == 2 and a["events"][0]["provider"] == "alpha"
    assert [(e["event"], e["time"]) for e in a["events"]] == [
        ("fired", t[1].isoformat()), ("resolved", t[2].isoformat()), ("fired", t[3].isoformat())]
    assert a["resolved"] == 1, "resolutions are counted though the rule sends no message for them"
    table = CliRunner().invoke(app, ["--db", url, "alerts", "backtest", "--gpu", "H100", "--below", "2.0",
                                     "--since", t[0].isoformat(), "--until", (t[-1] + HOUR).isoformat()])
    assert table.exit_code == 0 and "fired 2" in table.stdout and "nothing was sent or stored" in table.stdout
    missing = CliRunner().invoke(app, ["--db", url, "alerts", "backtest", "nosuchrule"])
    assert missing.exit_code != 0


def test_the_api_answers_as_the_command(sqlite_engine: Engine) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from tracker.web import create_app

    t = collect(sqlite_engine, [3.0, 1.9, 1.9, 2.2, 1.9, 2.5])
    url = sqlite_engine.url.render_as_string(hide_password=False)
    span = {"since": t[0].isoformat(), "until": (t[-1] + HOUR).isoformat()}
    with TestClient(create_app(Settings(database=url), sqlite_engine), base_url="http://127.0.0.1") as client:
        r = client.get("/api/alerts/backtest", params={"gpu": "H100", "below": 2.0, "for": 2, "resolved": True, **span})
        assert r.status_code == 200, r.text
        body = r.json()
        bad = client.get("/api/alerts/backtest", params={"rule": "nosuchrule"})
    assert [(e["event"], e["time"][:16]) for e in body["events"]] == [
        ("fired", t[2].isoformat()[:16]), ("resolved", t[3].isoformat()[:16])]
    assert body["evaluations"] == 6 and body["firing_s"] == 3600
    assert bad.status_code == 400 and "nosuchrule" in bad.json()["detail"]


def test_a_failed_collection_neither_resolves_nor_fires(engine: Engine) -> None:
    """alpha (cheap) fails one collection while beta goes on: as in the scheduler, alpha is held,
    so its absence does not resolve the rule, and its return does not fire it again."""
    times = [T0 + i * HOUR for i in range(5)]
    for i, at in enumerate(times):
        with session_scope(engine) as s:
            for provider, price in (("alpha", 1.8), ("beta", 2.5)):
                prov = labels.ensure_provider(s, provider)
                if provider == "alpha" and i == 2:
                    store_stage.record_failed_attempt(s, provider, at)
                    prov.last_attempt_at, prov.last_status = at, "failed"
                    s.add(ScrapeRun(provider=provider, started_at=at, finished_at=at, status="failed"))
                    continue
                store_stage.store_observation(s, provider, [offer(provider, "x", price)], at, prov.last_attempt_at)
                prov.last_attempt_at = prov.last_success_at = at
                prov.last_status = "ok"
                s.add(ScrapeRun(provider=provider, started_at=at, finished_at=at, status="ok"))
    result = backtest(engine, SETTINGS, rule(below=2.0, resolved=True), since=times[0], until=times[-1] + HOUR)
    assert [(e.event, e.time) for e in result.events] == [("fired", times[0])]
    assert result.firing_at_end and result.firing_s == 4 * 3600


def simulate(prices: list[float], threshold: float, for_n: int, rearm: float) -> list[int]:
    """Indexes at which a ``below`` rule fires, by the state machine's own definition: the
    condition must hold at ``for_n`` consecutive observations; after firing, the rule re-arms
    once the price is at least ``threshold + rearm``."""
    fired, count, firing = [], 0, False
    for i, p in enumerate(prices):
        if firing:
            firing = p < threshold + rearm
        elif p < threshold:
            count += 1
            if count >= for_n:
                fired.append(i)
                firing, count = True, 0
        else:
            count = 0
    return fired


def test_for_and_rearm_count_every_imported_snapshot(engine: Engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An imported archive stores one interval per plateau; ``for`` still counts each snapshot."""
    from tracker.pipeline.imports import import_files

    prices = [3.0, 1.9, 1.9, 1.9, 2.05, 1.95, 1.95, 2.3, 1.8, 1.8, 1.8, 1.8, 2.6, 1.7, 1.7, 1.7]
    start = datetime(2025, 6, 1, 8, 0, 7, tzinfo=UTC)
    times = [start + i * timedelta(minutes=30) for i in range(len(prices))]
    lines = [{"timestamp": at.isoformat(), "gpu_type": "H100_80GB", "socket_type": "SXM5",
              "by_provider": {"primecompute": {"count": 1, "min": p, "avg": p}, "runpod": {"count": 1, "min": 9.0, "avg": 9.0}}}
             for at, p in zip(times, prices, strict=True)]
    path = tmp_path / "plateaus.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    import_files(engine, [path])
    with Session(engine) as s:
        stored = sum(1 for r in reads.interval_rows(in_transaction(s.connection())) if r.observations > 1)
    assert stored >= 4  # plateaus are single intervals: the snapshots inside them are not interval boundaries
    cases = {(2, 0.0): [2, 6, 9, 14], (2, 0.25): [2, 9, 14], (3, 0.0): [3, 10, 15], (3, 0.25): [3, 10, 15]}
    for (for_n, rearm), expected in cases.items():
        assert simulate(prices, 2.0, for_n, rearm) == expected
        table: dict[str, object] = {"below": 2.0, "for": for_n, "providers": ["primecompute"]}
        if rearm:
            table["rearm"] = rearm
        result = backtest(engine, SETTINGS, rule(**table), since=times[0], until=times[-1] + timedelta(minutes=30))
        assert result.evaluations == len(times), (for_n, rearm)
        assert fired_at(result) == [times[i] for i in expected], (for_n, rearm)
        assert all(e.value == pytest.approx(prices[times.index(e.time)]) for e in result.events)
