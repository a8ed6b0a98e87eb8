"""Partial collections (``tracker.pipeline.partial``) are not delistings, on both backends.

A provider lists 2,000 offers, answers 64 of them once, then everything again: the 1,936 it did
not see stay on its current list (held at their last price), their intervals end at the partial
attempt exactly as a failed collection would end them (unknown, a gap: never "unchanged"), the
run says it was partial and why, and no alert reacts to their absence.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import reads
from db.models import Provider, ScrapeRun
from db.reader import in_transaction
from scrapers.base import Http, PartialOffers, ScrapedOffer, Scraper
from tracker.alerts.evaluate import evaluate
from tracker.alerts.rules import parse_rule
from tracker.config.settings import Settings
from tracker.pipeline import collect as collect_mod
from tracker.pipeline import partial as partial_rule
from tracker.pipeline.collect import collect

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
MARKET = 2000
SEEN = 64


class Answer:
    """What the fake providers answer next: how many offers, and whether they say it is partial."""

    count: int = MARKET
    said_partial: str | None = None
    fail: bool = False


class MarketScraper(Scraper):
    """2,000 H100 offers (sku m0000..m1999; m1999 is the cheapest), cut to ``Answer.count``."""

    name: ClassVar[str] = "bigmarket"
    display_name: ClassVar[str] = "Big Market"

    async def fetch(self, http: Http) -> Any:
        if Answer.fail:
            raise collect_mod.FetchError(f"{self.name}: upstream trouble")
        return Answer.count

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        offers = [self.offer(sku=f"m{i:04d}", gpu_raw="H100 SXM", gpu_count=1, price_per_hour=3.0 - i / 1000,
                             region="r1") for i in range(raw)]
        return PartialOffers(offers, reason=Answer.said_partial) if Answer.said_partial else offers


class FailingTwin(MarketScraper):
    """The same market, whose collection at the partial's time fails: the reference for "unknown"."""

    name: ClassVar[str] = "twinmarket"
    display_name: ClassVar[str] = "Twin Market"

    async def fetch(self, http: Http) -> Any:
        if Answer.count != MARKET:
            raise collect_mod.FetchError(f"{self.name}: upstream trouble")
        return MARKET


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[datetime]]:
    """The collector's clock, set by the test (``now[0]``)."""
    now = [T0]
    monkeypatch.setattr(collect_mod, "utcnow", lambda: now[0])
    Answer.count, Answer.said_partial, Answer.fail = MARKET, None, False
    yield now


def _collect(engine: Engine, *classes: type[Scraper]) -> dict[str, collect_mod.RunResult]:
    return {r.provider: r for r in collect(engine, Settings(), classes=list(classes or (MarketScraper,)), environ={})}


def _intervals(engine: Engine, provider: str) -> dict[str, list[tuple[int, int | None]]]:
    """sku -> [(first_seen, ends_at), ...] in time order."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT o.sku, i.first_seen, i.ends_at FROM price_interval i JOIN offer o ON o.id = i.offer_id "
            "WHERE o.provider = :p ORDER BY o.sku, i.first_seen"), {"p": provider}).all()
    out: dict[str, list[tuple[int, int | None]]] = {}
    for sku, first, ends in rows:
        out.setdefault(sku, []).append((int(first), None if ends is None else int(ends)))
    return out


def _current(engine: Engine, provider: str) -> dict[str, dict[str, Any]]:
    with Session(engine) as s:
        return {r["sku"]: r for r in reads.latest_prices(in_transaction(s.connection()), providers=[provider], include_stale=True)}


def _epoch(at: datetime) -> int:
    return int(at.timestamp())


def test_64_of_2000_once_then_everything_again(engine: Engine, clock: list[datetime]) -> None:
    settings = Settings(alerts=[{"name": "cheap-h100", "gpu": "H100", "below": 1.5}])
    rule = parse_rule(settings.alerts[0])
    assert _collect(engine, MarketScraper, FailingTwin)["bigmarket"].status == "ok"
    assert [e.after for e in evaluate(engine, settings, rules=[rule], now=T0)] == ["firing"]  # m1999 at $1.001

    clock[0] = T0 + HOUR
    Answer.count = SEEN  # the 64 dearest: the cheap m1999 is not among them
    runs = _collect(engine, MarketScraper, FailingTwin)
    run = runs["bigmarket"]
    assert (run.status, run.offers_seen, run.error_class) == ("partial", SEEN, partial_rule.SMALL)
    assert "listed 64 offers, under 50% of the median (2000)" in run.error_message
    assert f"{MARKET - SEEN} offers not seen are unknown, not delisted" in run.error_message
    assert runs["twinmarket"].status == "failed"
    with Session(engine) as s:
        stored = s.get(ScrapeRun, run.run_id)
        assert stored is not None and (stored.status, stored.error_class) == ("partial", partial_rule.SMALL)
        provider = s.get(Provider, "bigmarket")
        assert provider is not None and provider.last_status == "partial"
        assert provider.last_success_at == T0  # the last complete list
    current = _current(engine, "bigmarket")
    assert len(current) == MARKET  # nothing delisted: the unseen are held at their last price
    assert all(current[f"m{i:04d}"]["observed_at"] == T0 + HOUR for i in range(SEEN))
    assert all(current[f"m{i:04d}"]["observed_at"] == T0 for i in range(SEEN, MARKET))
    # the rule watching the unseen cheapest offer neither resolves nor changes
    [ev] = evaluate(engine, settings, rules=[rule], now=T0 + HOUR)
    assert (ev.before, ev.after, ev.events) == ("firing", "firing", ())

    clock[0] = T0 + 2 * HOUR
    Answer.count = MARKET
    run = _collect(engine, MarketScraper, FailingTwin)["bigmarket"]
    assert (run.status, run.error_class, run.new_offers, run.returned_offers) == ("ok", None, 0, MARKET - SEEN)
    assert len(_current(engine, "bigmarket")) == MARKET
    [ev] = evaluate(engine, settings, rules=[rule], now=T0 + 2 * HOUR)
    assert (ev.after, ev.events) == ("firing", ())

    # the unseen offers' history is the one a failed collection writes (unknown is a gap), never a
    # delisting that is then relisted: each ends at the partial attempt and starts again when seen
    ours, twin = _intervals(engine, "bigmarket"), _intervals(engine, "twinmarket")
    t0, t1, t2 = _epoch(T0), _epoch(T0 + HOUR), _epoch(T0 + 2 * HOUR)
    for i in range(SEEN, MARKET):
        sku = f"m{i:04d}"
        assert ours[sku] == twin[sku] == [(t0, t1), (t2, None)], sku
    assert all(ours[f"m{i:04d}"] == [(t0, None)] for i in range(SEEN))  # seen each time: one interval


def test_a_scraper_that_says_it_saw_part_of_the_market(engine: Engine, clock: list[datetime]) -> None:
    _collect(engine)
    for step in (1, 2):  # twice in a row: the size rule is not what decides
        clock[0] = T0 + step * HOUR
        Answer.count, Answer.said_partial = 1990, "search clamped at 1990 offers"
        run = _collect(engine)["bigmarket"]
        assert (run.status, run.error_class) == ("partial", partial_rule.SAID_PARTIAL)
        assert run.error_message.startswith("bigmarket answered part of its market: search clamped at 1990 offers; 10 offers")
        assert len(_current(engine, "bigmarket")) == MARKET
    clock[0] = T0 + 3 * HOUR
    Answer.count, Answer.said_partial = 1990, None  # the same list, complete: m1990..m1999 are delisted now
    run = _collect(engine)["bigmarket"]
    assert run.status == "ok" and len(_current(engine, "bigmarket")) == 1990


def test_a_failure_after_a_partial_still_shows_what_it_saw(engine: Engine, clock: list[datetime]) -> None:
    _collect(engine)
    clock[0], Answer.count = T0 + HOUR, SEEN
    _collect(engine)
    clock[0], Answer.fail = T0 + 2 * HOUR, True
    assert _collect(engine)["bigmarket"].status == "failed"
    current = _current(engine, "bigmarket")
    assert len(current) == MARKET and current["m0000"]["observed_at"] == T0 + HOUR


def test_a_first_collection_that_is_partial_is_the_current_list(engine: Engine, clock: list[datetime]) -> None:
    Answer.count, Answer.said_partial = SEEN, "region eu did not answer"
    run = _collect(engine)["bigmarket"]
    assert run.status == "partial" and len(_current(engine, "bigmarket")) == SEEN


def test_a_shrink_that_lasts_is_taken_as_real(engine: Engine, clock: list[datetime]) -> None:
    Answer.count = 1000
    for step in range(partial_rule.RECENT):
        clock[0] = T0 + step * HOUR
        assert _collect(engine)["bigmarket"].status == "ok"
    statuses = []
    for step in range(partial_rule.RECENT, partial_rule.RECENT + 5):
        clock[0], Answer.count = T0 + step * HOUR, 400
        statuses.append(_collect(engine)["bigmarket"].status)
    # three small collections in a row move the median of the last five: the fourth is complete
    assert statuses == ["partial", "partial", "partial", "ok", "ok"]
    assert len(_current(engine, "bigmarket")) == 400


@pytest.mark.parametrize(("count", "recent", "partial"), [
    (64, [2000], True),
    (999, [2000, 2000, 1000], True),  # median 2000
    (1000, [2000, 2000, 1000], False),  # exactly half: not under it
    (5, [19, 19, 19], False),  # a median under MIN_MEDIAN: small lists move by more than half
    (9, [20, 20], True),
    (0, [], False),  # nothing to compare with
])
def test_the_size_rule(count: int, recent: list[int], partial: bool) -> None:
    assert (partial_rule.small("p", count, recent) is not None) is partial
