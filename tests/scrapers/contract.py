"""Invariants every provider scraper must keep, in a base class each provider test subclasses.

A provider's test module does::

    class TestVastai(ProviderContract):
        scraper_cls = VastaiScraper
        def load_raw(self): return load_json("vastai/offers.json")
        def broken_payloads(self): return [{}, {"offers": []}]

        def test_known_offer(self, offers): ...   # value-level assertions on the recording

and inherits: the recorded payload parses into well-formed offers, identities are unique,
the bundled replay recording drives the real ``fetch`` offline, and broken payloads raise
``ParseError`` naming the provider.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, ClassVar, NamedTuple

import httpx
import pytest

from scrapers.base import (
    FIXTURE_KINDS,
    KINDS,
    SOURCE_KINDS,
    UNREADABLE_PRICE,
    ParseError,
    ScrapedOffer,
    Scraper,
)
from scrapers.http import Http
from tracker.pipeline.replay import ReplayTransport


def run_fetch(scraper: Scraper, transport: httpx.AsyncBaseTransport) -> Any:
    """Run ``scraper.fetch`` over ``transport`` with no retry sleeps."""

    async def go() -> Any:
        async def no_sleep(_: float) -> None:
            return None

        async with httpx.AsyncClient(transport=transport) as client:
            http = Http(client, provider=scraper.name, sleep=no_sleep, hosts=scraper.allowed_hosts())
            return await scraper.fetch(http)

    return asyncio.run(go())


@functools.cache
def replayed_payload(name: str) -> Any:
    """The raw payload the real ``fetch`` of provider ``name`` returns over its bundled recording
    (cached: treat it as read-only)."""
    from scrapers.registry import all_scrapers

    scraper = all_scrapers()[name](env={}, replay=True)
    return run_fetch(scraper, ReplayTransport.for_provider(name))


def index_offers(offers: list[ScrapedOffer], fields: tuple[str, ...] = ("sku", "region", "kind")) -> dict[tuple[Any, ...], ScrapedOffer]:
    """Offers keyed by the tuple of their ``fields`` (default: sku, region, kind), for lookups in tests."""
    return {tuple(getattr(o, f) for f in fields): o for o in offers}


class NamedOffer(NamedTuple):
    """One offer as the provider's replay recording states it (a derived price, per hour from a
    month or cents, is the parser's arithmetic on the figure the file prints). ``sku`` only where
    GPU, count, kind and region name several offers."""

    gpu_raw: str
    gpu_count: int
    kind: str
    region: str
    price_per_hour: float
    currency: str = "USD"
    sku: str | None = None


class ProviderContract:
    scraper_cls: ClassVar[type[Scraper]]
    #: Every active provider names one offer of its replay recording (the file its fixture is),
    #: so each parser is held to values, not counts, on the newest shape known.
    named_offer: ClassVar[NamedOffer | None] = None
    #: True when the payload is not a real recording: a reference (the real shape, our own values),
    #: a handmade sample or an API-reference example (see tests/fixtures/<provider>/README.md and the manifest).
    handmade: ClassVar[bool] = False
    min_offers: ClassVar[int] = 1

    def load_raw(self) -> Any:
        raise NotImplementedError

    def broken_payloads(self) -> list[Any]:
        """Payloads whose shape changed: each must raise ParseError."""
        raise NotImplementedError

    @pytest.fixture
    def offers(self) -> list[ScrapedOffer]:
        return self.scraper_cls(env={}).parse(self.load_raw())

    def test_recorded_payload_parses_into_wellformed_offers(self, offers: list[ScrapedOffer]) -> None:
        assert len(offers) >= self.min_offers
        name = self.scraper_cls.name
        for o in offers:
            assert isinstance(o, ScrapedOffer)
            assert o.provider == name
            assert o.kind in KINDS
            assert o.price_per_hour is None or o.price_per_hour > 0, o
            assert o.gpu_count > 0, o
            assert o.gpu_raw.strip(), o

    def test_offer_identities_are_unique(self, offers: list[ScrapedOffer]) -> None:
        keys = [(o.sku, o.region, o.kind, o.term_months) for o in offers]
        dupes = {k for k in keys if keys.count(k) > 1}
        assert not dupes, f"duplicate identities: {sorted(dupes)[:5]}"

    def test_bundled_replay_drives_the_real_fetch(self) -> None:
        scraper = self.scraper_cls(env={}, replay=True)
        transport = ReplayTransport.for_provider(scraper.name)
        assert transport.recordings, f"no bundled recording for {scraper.name} in tracker/recordings/"
        offers = scraper.parse(run_fetch(scraper, transport))
        assert len(offers) >= self.min_offers
        assert transport.requests, "fetch made no request"

    def test_the_replay_recording_states_the_named_offer(self) -> None:
        cls, want = self.scraper_cls, self.named_offer
        if want is None:  # test_named_offers holds every active provider to one
            pytest.skip(f"{cls.name}: its offer is named by another test class, or it is retired")
        offers = cls(env={}, replay=True).parse(replayed_payload(cls.name))
        found = [o for o in offers if (o.gpu_raw, o.gpu_count, o.kind, o.region) == want[:4]
                 and want.sku in (None, o.sku)]
        assert len(found) == 1, (want, [(o.sku, o.gpu_raw, o.gpu_count, o.kind, o.region) for o in offers][:20])
        assert (found[0].price_per_hour, found[0].currency) == (pytest.approx(want.price_per_hour), want.currency)

    def test_changed_shape_raises_parse_error_naming_the_provider(self) -> None:
        payloads = self.broken_payloads()
        assert payloads
        for payload in payloads:
            scraper = self.scraper_cls(env={})
            with pytest.raises(ParseError, match=self.scraper_cls.name):
                scraper.readable(scraper.parse(payload))  # every offer unreadable: the field changed

    def bad_offer_payloads(self) -> list[Any]:
        """Payloads where one offer's own price or GPU count is missing, no number or negative."""
        return []

    @staticmethod
    def row_of(offer: Any) -> str:
        """The payload's row or item an offer (scraped or normalised) comes from: pages price one
        row several ways."""
        return offer.sku

    def test_one_bad_offer_is_left_for_quarantine_not_fatal(self) -> None:
        """That offer comes back marked for quarantine with a reason naming the field; the rest stays."""
        for payload in self.bad_offer_payloads():
            scraper = self.scraper_cls(env={})
            offers = scraper.readable(scraper.parse(payload))
            bad = [o for o in offers if o.extra.get(UNREADABLE_PRICE)]
            assert bad and len(bad) < len(offers), [o.extra.get(UNREADABLE_PRICE) for o in offers]
            assert len({self.row_of(o) for o in bad}) == 1
            assert all(o.extra[UNREADABLE_PRICE].startswith(("price field ", "GPU count field ")) for o in bad)

    def test_declares_identity(self) -> None:
        cls = self.scraper_cls
        assert cls.name == cls.name.lower() and cls.name.isidentifier()
        assert cls.display_name and cls.endpoint

    def test_declares_source_and_fixture_kind(self) -> None:
        """The README table shows both; a handmade fixture must never be labelled a recording."""
        cls = self.scraper_cls
        assert cls.source_kind in SOURCE_KINDS, f"{cls.name}: source_kind {cls.source_kind!r}"
        assert cls.fixture_kind in FIXTURE_KINDS, f"{cls.name}: fixture_kind {cls.fixture_kind!r}"
        assert (cls.fixture_kind != "recording") == self.handmade, f"{cls.name}: fixture_kind vs the test's handmade flag"
