"""An alert on GPUs free now at one provider: "8 or more H100 free at one provider under $2.50"
(``below = 2.5`` with ``min_available = 8``), through the real pipeline, the rule parser and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from tests.alerts.helpers import Market, cli, events, fast_settings, h100
from tracker.alerts.data import make_view
from tracker.alerts.rules import parse_rule
from tracker.errors import ConfigError

EIGHT = {"name": "eight", "gpu": "H100", "below": 2.5, "min_available": 8, "resolved": True}


def test_fires_when_eight_are_free_under_the_price_at_one_provider(sqlite_engine: Engine) -> None:
    market = Market(sqlite_engine, fast_settings(EIGHT))
    # 4 + 3 = 7 free under $2.50 at p1, 2 at p2, and an offer that says it is available without a count
    market.cycle(p1=[h100("a", 2.0, free=4), h100("b", 2.4, free=3)],
                 p2=[h100("c", 2.2, free=2), h100("e", 1.0, available=True)])
    # 10 more at p1, but at $3.00: eight are free at p1 only from $3.00 on
    market.cycle(p1=[h100("a", 2.0, free=4), h100("b", 2.4, free=3), h100("d", 3.0, free=10)],
                 p2=[h100("c", 2.2, free=2), h100("e", 1.0, available=True)])
    assert events(sqlite_engine) == []
    # b frees 5: 4 + 5 = 9 at p1, the eighth at $2.40
    market.cycle(p1=[h100("a", 2.0, free=4), h100("b", 2.4, free=5)], p2=[h100("c", 2.2, free=2)])
    # b sold out: 4 free at p1, none anywhere reaches eight: the condition stops holding
    market.cycle(p1=[h100("a", 2.0, free=4), h100("b", 2.4, free=0)], p2=[h100("c", 2.2, free=2)])
    assert [(e.kind, e.value) for e in events(sqlite_engine)] == [("fired", 2.4), ("resolved", None)]
    assert events(sqlite_engine)[0].provider == "p1"
    assert "at 2.4 USD/GPU-h, 2.4 USD/h, 5 GPUs free" in events(sqlite_engine)[0].message  # the eighth GPU's offer


def test_the_view_adds_up_counts_best_value_first() -> None:
    rule = parse_rule({**EIGHT, "min_available": 6})
    rows = [{"provider": "p", "sku": f"s{price}", "region": "r", "gpu": "H100-SXM", "price_per_gpu_hour": price,
             "currency": "USD", "gpu_count": 1, "available": free > 0, "available_count": free}
            for price, free in ((2.6, 5), (2.0, 2), (2.2, 3), (1.0, 0))]
    view = make_view(rule, rows, {})
    # 2 at $2.00, then 3 at $2.20 (5), then 5 at $2.60 (10 >= 6): six are free from $2.60 on
    assert view.value == 2.6 and [r["price_per_gpu_hour"] for r in view.rows] == [2.6]


def test_one_listings_kinds_count_its_gpus_once() -> None:
    """A marketplace host listed on demand and as spot (one sku and region) has its 4 GPUs free once."""
    rule = parse_rule({**EIGHT, "min_available": 6, "kinds": ["all"]})
    rows = [{"provider": "p", "sku": "host", "region": "r", "kind": kind, "gpu": "H100-SXM", "price_per_gpu_hour": price,
             "currency": "USD", "gpu_count": 4, "available": True, "available_count": 4}
            for kind, price in (("spot", 1.0), ("on_demand", 2.0))]
    assert make_view(rule, rows, {}).value is None  # 4 GPUs, not 8
    other = {**rows[0], "sku": "other", "kind": "on_demand", "price_per_gpu_hour": 2.2, "available_count": 2}
    assert make_view(rule, [*rows, other], {}).value == 2.2


@pytest.mark.parametrize(("extra", "message"), [
    ({"min_available": 0}, "whole number of GPUs from 1"), ({"min_available": 2.5}, "whole number of GPUs from 1"),
    ({"min_available": True}, "whole number of GPUs from 1"),
    ({"below": None, "new_low": True}, "applies to below, above and available_again only"),
])
def test_a_bad_min_available_is_refused(extra: dict[str, object], message: str) -> None:
    table = {k: v for k, v in {**EIGHT, "resolved": False, **extra}.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        parse_rule(table)


def test_the_rule_says_it_and_keeps_older_fingerprints() -> None:
    rule = parse_rule(EIGHT)
    assert rule.describe() == "min price of H100 with 8+ GPUs free at one provider below 2.5"
    plain = parse_rule({k: v for k, v in EIGHT.items() if k != "min_available"})
    assert plain.fingerprint() != rule.fingerprint()
    assert parse_rule({**EIGHT, "min_available": 9}).fingerprint() != rule.fingerprint()


def test_alerts_add_and_backtest_from_the_command_line(tmp_path: Path) -> None:
    db, config = f"sqlite:///{tmp_path / 'a.db'}", tmp_path / "c.toml"
    config.write_text("")
    code, out = cli(db, config, "alerts", "add", "eight", "--gpu", "H100", "--below", "2.5", "--min-available", "8")
    assert code == 0, out
    code, out = cli(db, config, "alerts", "list", "--format", "json")
    assert code == 0 and "eight" in out
    code, out = cli(db, config, "alerts", "backtest", "eight")
    assert code == 2 and "only the newest count of free GPUs is stored" in out
    code, out = cli(db, config, "alerts", "add", "low", "--gpu", "H100", "--new-low", "--min-available", "8")
    assert code == 2 and "min_available: applies to below" in out


def test_available_again_on_counts(sqlite_engine: Engine) -> None:
    """``available_again`` on stated stock: a sold-out offer (0 free) coming back fires; with
    ``min_available`` it takes that many GPUs free at one provider."""
    market = Market(sqlite_engine, fast_settings({"name": "back", "gpu": "H100", "available_again": True},
                                                 {"name": "four", "gpu": "H100", "available_again": True, "min_available": 4}))
    for free in (0, 0, 2, 0, 5):
        market.cycle(p1=[h100("a", 2.0, free=free)])
    # back: none -> 2 free fires; 2 -> 0 -> 5 fires again (none resolves it in between)
    assert [(e.kind, e.value) for e in events(sqlite_engine, "back")] == [("fired", 1.0), ("fired", 1.0)]
    # four: only the 5 reaches four GPUs
    assert [(e.kind, e.value) for e in events(sqlite_engine, "four")] == [("fired", 1.0)]
