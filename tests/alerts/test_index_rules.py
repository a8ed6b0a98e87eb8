"""Alert rules on the rental index (``metric = "index"``, ``--index-below``, ``--index-drop-pct``):
the value is median-of-medians-1 over the offers in effect, checked by arithmetic here through the
backtest (the scheduler's own evaluation code) on a hand-built history, both backends."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from sqlalchemy.engine import Engine

from db import labels
from db.engine import session_scope
from db.models import ScrapeRun
from tests.analysis.seq import HOUR, T0, offer
from tests.conftest import run_main
from tracker.alerts.backtest import backtest
from tracker.alerts.data import make_view
from tracker.alerts.rules import parse_rule
from tracker.config.settings import Settings
from tracker.errors import ConfigError
from tracker.pipeline import store as store_stage

SETTINGS = Settings(delivery={"allow_hosts": ["127.0.0.1"]})
#: Per hour, each provider's H100-SXM on-demand prices (one collection each).
MARKET = [
    {"alpha": [2.0, 3.0, 10.0], "beta": [4.0], "gamma": [5.0]},  # votes 3, 4, 5: index 4.0
    {"alpha": [1.0], "beta": [1.5, 1.7, 9.0], "gamma": [5.0]},  # votes 1, 1.7, 5: index 1.7
    {"alpha": [1.0], "beta": [1.5], "gamma": [1.8]},  # index 1.5
    {"alpha": [3.0], "beta": [4.0], "gamma": [5.0]},  # index 4.0
]


def collect_market(engine: Engine) -> list[datetime]:
    times = []
    for i, market in enumerate(MARKET):
        at = T0 + i * HOUR
        for provider, prices in market.items():
            with session_scope(engine) as s:
                prov = labels.ensure_provider(s, provider)
                listed = [offer(provider, f"s{j}", p) for j, p in enumerate(prices)]
                store_stage.store_observation(s, provider, listed, at, prov.last_attempt_at)
                prov.last_attempt_at = prov.last_success_at = at
                prov.last_status = "ok"
                s.add(ScrapeRun(provider=provider, started_at=at, finished_at=at, status="ok"))
        times.append(at)
    return times


def rule(**table: object):  # type: ignore[no-untyped-def]
    return parse_rule({"name": "idx", "gpu": "H100-SXM", "metric": "index", **table}, where="test")


def test_index_below_fires_on_the_index_not_the_cheapest_offer(engine: Engine) -> None:
    t = collect_market(engine)
    result = backtest(engine, SETTINGS, rule(below=2.0, resolved=True), since=t[0], until=t[-1] + HOUR)
    assert [(e.time, e.event, e.value) for e in result.events] == [
        (t[1], "fired", pytest.approx(sorted([1.0, sorted([1.5, 1.7, 9.0])[1], 5.0])[1])),
        (t[3], "resolved", pytest.approx(4.0))]
    assert result.events[0].provider == "alpha"  # the cheapest offer behind it, for the message
    cheapest = backtest(engine, SETTINGS, parse_rule({"name": "p", "gpu": "H100-SXM", "below": 2.0}, where="test"),
                        since=t[0], until=t[-1] + HOUR)
    assert [(e.time, e.event, e.value) for e in cheapest.events] == [
        (t[1], "fired", pytest.approx(1.0)), (t[3], "resolved", pytest.approx(3.0))]  # resolutions listed by default


def test_index_drop_pct_compares_with_the_index_a_window_earlier(engine: Engine) -> None:
    t = collect_market(engine)
    result = backtest(engine, SETTINGS, rule(drop_pct=50.0, window="1h"), since=t[0], until=t[-1] + HOUR)
    fired = [e for e in result.events if e.event == "fired"]
    assert [(e.time, e.value) for e in fired] == [(t[1], pytest.approx(1.7))]  # 4.0 -> 1.7: 57.5 % down
    assert (4.0 - 1.7) / 4.0 >= 0.5 > (1.7 - 1.5) / 1.7


def test_an_aggregators_offer_counts_as_the_cloud_and_half_gpus_not_at_all() -> None:
    rows = [
        {"provider": "runpod", "via": None, "gpu": "H100-SXM", "gpu_count": 1, "price_per_gpu_hour": 4.0},
        {"provider": "getdeploying", "via": "runpod", "gpu": "H100-SXM", "gpu_count": 1, "price_per_gpu_hour": 6.0},
        {"provider": "lambda", "via": None, "gpu": "H100-SXM", "gpu_count": 8, "price_per_gpu_hour": 3.0},
        {"provider": "getdeploying", "via": "databasemart", "gpu": "H100-SXM", "gpu_count": 1, "price_per_gpu_hour": 2.6},
        {"provider": "vultr", "via": None, "gpu": "H100-SXM", "gpu_count": 0.5, "price_per_gpu_hour": 0.1},
    ]
    view = make_view(rule(below=2.0), [{**r, "currency": "USD"} for r in rows], {})
    assert view.value == pytest.approx(3.0)  # votes: runpod (4 + 6) / 2, lambda 3, getdeploying 2.6


def test_index_rules_are_checked() -> None:
    assert rule(below=2.0).kinds == ("on_demand",)
    assert rule(below=2.0, kinds=["spot"]).kinds == ("spot",)
    assert rule(below=2.0).describe() == "rental index of H100-SXM below 2"
    with pytest.raises(ConfigError, match="watches one GPU"):
        parse_rule({"name": "f", "gpu": "H100", "metric": "index", "below": 2.0}, where="test")
    with pytest.raises(ConfigError, match="aggregate"):
        rule(below=2.0, aggregate="median")
    with pytest.raises(ConfigError, match="below, above or drop_pct"):
        rule(new_low=True)


def test_the_commands(sqlite_engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    t = collect_market(sqlite_engine)
    url = sqlite_engine.url.render_as_string(hide_password=False)
    code, out, err = run_main(capsys, "--db", url, "alerts", "backtest", "--gpu", "H100-SXM", "--index-below", "2",
                              "--since", t[0].isoformat(), "--until", (t[-1] + HOUR).isoformat(), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["description"] == "rental index of H100-SXM below 2" and data["fired"] == 1
    code, out, err = run_main(capsys, "--db", url, "alerts", "add", "idx-drop", "--gpu", "H100-SXM",
                              "--index-drop-pct", "10", "--window", "7d")
    assert code == 0, err
    assert "rental index of H100-SXM dropped 10% over 7d" in out
    code, _out, err = run_main(capsys, "--db", url, "alerts", "add", "clash", "--gpu", "H100-SXM", "--index-below", "2",
                               "--below", "3")
    assert code == 2 and "one condition only" in err


def test_a_live_index_rule_fires_on_the_collected_market(sqlite_engine: Engine) -> None:
    """Through the real pipeline (fake providers on the collector, the scheduler's check): the index
    of the current offers, not the cheapest one."""
    from tests.alerts.helpers import Market, events, fast_settings, h100

    market = Market(sqlite_engine, fast_settings(
        {"name": "idx", "gpu": "H100-SXM", "metric": "index", "below": 2.5},
        {"name": "cheap", "gpu": "H100-SXM", "below": 2.5},
    ))
    # votes: p1 median(1.0, 2.0, 9.0) = 2.0, p2 3.0, p3 2.2 -> index 2.2 (below 2.5); cheapest 1.0
    market.cycle(p1=[h100("a", 1.0), h100("b", 2.0), h100("c", 9.0)], p2=[h100("a", 3.0)], p3=[h100("a", 2.2)])
    got = {e.rule: e.value for e in events(sqlite_engine)}
    assert got == {"idx": pytest.approx(2.2), "cheap": pytest.approx(1.0)}
