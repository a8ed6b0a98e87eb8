"""The availability summary against a hand-built history (both backends): twelve hourly collections
of one provider, one of them failed, with offers going in and out of stock; every expected figure
is worked out here from the timeline, hour by hour.

Timeline (hour h = T0 + h hours; T available, F not, ? not stated; X the failed collection):

    hour     0 1 2 3 4 5 6 7 8 9 10 11
    r1 a     T T T F F F F T X T T  T     (H100-SXM)
    r1 b     F F F F T F F F X F F  F     (H100-SXM)
    r2 c     ? ? ? ? ? ? ? ? X ? ?  ?     (H100-PCIe: the provider states no stock there)
    r3 d     F F F F F F F F X F F  F     (H100-SXM)

Each observation holds until the next collection attempt (one hour), so an hour's state covers
[h, h+1); the failed attempt at 8 ends every interval there and [8, 9) is not observed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from db import labels
from db.engine import session_scope
from tests.conftest import read
from tracker.analysis.availability import availability, minus, union
from tracker.cli import app as cli_app
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer

T0 = datetime(2026, 3, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
H = 3600
TIMELINE = {  # sku: (region, gpu, states by hour; None at the failed hour 8)
    "a": ("r1", "H100-SXM", "TTTFFFFT.TTT"),
    "b": ("r1", "H100-SXM", "FFFFTFFF.FFF"),
    "c": ("r2", "H100-PCIe", "????????.???"),
    "d": ("r3", "H100-SXM", "FFFFFFFF.FFF"),
}
STATE = {"T": True, "F": False, "?": None}


def offer(sku: str, hour: int) -> NormalisedOffer:
    region, gpu, states = TIMELINE[sku]
    return NormalisedOffer(provider="p", sku=sku, region=region, kind="on_demand", term_months=0, gpu=gpu, gpu_raw=gpu,
                           gpu_count=1, price_per_hour=2.0, price_per_gpu_hour=2.0, currency="USD",
                           available=STATE[states[hour]])


def build(engine: Engine) -> None:
    for hour in range(12):
        at = T0 + hour * HOUR
        with session_scope(engine) as s:
            prov = labels.ensure_provider(s, "p")
            if hour == 8:
                store_stage.record_failed_attempt(s, "p", at)
                prov.last_status = "failed"
            else:
                store_stage.store_observation(s, "p", [offer(sku, hour) for sku in TIMELINE], at, prov.last_attempt_at,
                                              interval_s=H)
                prov.last_success_at, prov.last_status = at, "ok"
            prov.last_attempt_at = at


@pytest.fixture
def history(engine: Engine) -> Engine:
    build(engine)
    return engine


def figures(engine: Engine, since_h: int = 0, until_h: int = 12, **filters: object) -> dict[str, dict[str, object]]:
    found = read(engine, availability,  ["H100-SXM", "H100-PCIe"], T0 + since_h * HOUR, T0 + until_h * HOUR, **filters)  # type: ignore[arg-type]
    return {a.region: {"offers": a.offers, "observed": a.observed_s, "available": a.available_s, "share": a.share,
                       "longest": a.longest_unavailable_s, "longest_from": a.longest_unavailable_from,
                       "last": a.last_available} for a in found}


def at(hour: int) -> int:
    return int((T0 + hour * HOUR).timestamp())


def test_the_whole_range(history: Engine) -> None:
    got = figures(history)
    # r1: observed [0,8) and [9,12) = 11 h; some offer available in [0,3) (a), [4,5) (b), [7,8) (a), [9,12) (a)
    observed, up = 8 + 3, 3 + 1 + 1 + 3
    # none available in [3,4) and [5,7): the longest is 2 h from hour 5; a was last seen available at hour 11
    assert got["r1"] == {"offers": 2, "observed": observed * H, "available": up * H, "share": up / observed,
                         "longest": 2 * H, "longest_from": at(5), "last": at(11)}
    # r2 states nothing: unknown, not unavailable (no share, nothing observed, no stretch)
    assert got["r2"] == {"offers": 1, "observed": 0, "available": 0, "share": None, "longest": 0, "longest_from": None,
                         "last": None}
    # r3 is never available: the failed hour splits its 11 unavailable hours into 8 + 3
    assert got["r3"] == {"offers": 1, "observed": 11 * H, "available": 0, "share": 0.0, "longest": 8 * H,
                         "longest_from": at(0), "last": None}


def test_a_range_cuts_the_intervals(history: Engine) -> None:
    got = figures(history, since_h=5, until_h=10)
    # r1 from hour 5 to 10: observed [5,8) and [9,10) = 4 h, available [7,8) and [9,10) = 2 h
    assert (got["r1"]["observed"], got["r1"]["available"], got["r1"]["longest"]) == (4 * H, 2 * H, 2 * H)
    assert got["r1"]["last"] == at(10)  # a's interval seen available spans the end of the range: available then
    assert (got["r3"]["observed"], got["r3"]["longest"], got["r3"]["longest_from"]) == (4 * H, 3 * H, at(5))


def test_filters(history: Engine) -> None:
    assert set(figures(history, regions=["r1", "r3"])) == {"r1", "r3"}
    assert figures(history, providers=["nobody"]) == {}
    assert figures(history, kinds=["spot"]) == {}
    assert read(history, availability, ["A100-SXM-80GB"], T0, T0 + 12 * HOUR) == []


def test_spans_arithmetic() -> None:
    assert union([(5, 7), (0, 3), (3, 4), (6, 9)]) == [(0, 4), (5, 9)]
    assert minus([(0, 10), (12, 20)], [(2, 3), (9, 13)]) == [(0, 2), (3, 9), (13, 20)]


def test_the_command_and_its_json(history: Engine, db_url: str) -> None:
    runner = CliRunner()
    result = runner.invoke(cli_app, ["--db", db_url, "availability", "--gpu", "H100", "--since", "2026-03-01",
                                     "--until", "2026-03-01T12:00:00Z", "--format", "json"])
    assert result.exit_code == 0, result.output
    import json

    rows = {r["region"]: r for r in json.loads(result.stdout)}
    assert rows["r1"]["available_pct"] == round(100 * 8 / 11, 2) and rows["r1"]["longest_unavailable_h"] == 2.0
    assert rows["r1"]["last_available"].startswith("2026-03-01T11:00:00")
    assert rows["r2"]["available_pct"] is None and rows["r2"]["longest_unavailable_h"] is None
    table = runner.invoke(cli_app, ["--db", db_url, "availability", "--gpu", "H100", "--since", "2026-03-01",
                                    "--until", "2026-03-01T12:00:00Z"])
    assert table.exit_code == 0, table.output
    assert "unknown" in table.stdout and "72.73" in table.stdout


def test_help() -> None:
    result = CliRunner().invoke(cli_app, ["availability", "--help"])
    assert result.exit_code == 0
    assert "--since" in result.stdout and "longest" in result.stdout


def test_a_range_is_bounded(history: Engine, db_url: str) -> None:
    from tracker.errors import ConfigError

    with pytest.raises(ConfigError, match="more than one question reads"):
        read(history, availability, ["H100-SXM"], T0 - timedelta(days=400), T0)
    with pytest.raises(ConfigError, match="starts .* after it ends"):
        read(history, availability, ["H100-SXM"], T0 + HOUR, T0)
    result = CliRunner().invoke(cli_app, ["--db", db_url, "availability", "--gpu", "H100", "--since", "2y"])
    assert result.exit_code != 0 and "a year at a time" in str(result.exception or result.output)


def test_before_the_raw_horizon_nothing_is_counted(history: Engine) -> None:
    """After ``rollups prune`` only roll-ups are left before the horizon: the range starts there."""
    with session_scope(history) as s:
        s.connection().exec_driver_sql(
            f"INSERT INTO store_meta (key, value) VALUES ('raw_pruned_before', '{at(5)}')")
    assert figures(history)["r1"]["observed"] == figures(history, since_h=5)["r1"]["observed"] == (3 + 3) * H
