"""Lium (lium.io, a Bittensor GPU marketplace): the whole live machine book from its keyless API.

Request: ``GET https://lium.io/api/executors`` (no auth, no paging): a JSON list with one row per
machine ("executor") a miner offers, rented or not. A marketplace: each row is one machine, so
the same GPU model appears many times at the prices its owners set.

Per row the parser reads: ``id`` (the machine's UUID, the offer's sku), ``machine_name`` (the
GPU as printed: "NVIDIA H100 80GB HBM3", "NVIDIA RTX PRO 6000 Blackwell Server Edition"),
``gpu_count`` (GPUs in the machine), ``price_per_gpu`` (USD per GPU-hour: the site's "$/GPU/hr";
its "total $/hr" is ``gpu_count`` times it), ``available_gpu_count`` (GPUs free to rent now),
``tier`` ("secure" -> ``on_demand``, "spot" -> ``spot``), ``location`` (``country_code`` is
the region, city and state go to ``extra``). ``price_per_hour`` is the whole machine
(``price_per_gpu`` x ``gpu_count``); the per-GPU figure stays in ``extra``. The rows carry no
currency field; every price the site prints is in dollars.

Availability is what can be rented: ``available`` is ``available_gpu_count > 0`` and
``available_count`` (and ``extra["available_count"]``) the free GPUs; ``min_gpu_count_for_rental`` (the fewest GPUs the
owner rents out, ``None`` = any) is kept. ``pending_price_per_hour`` with
``price_change_effective_date`` is a *scheduled* price change, never the current price: kept in
``extra`` only.

Not a list, an empty book, a row that is not an object or lacks ``id`` / ``machine_name``, or a
``tier`` this parser does not know -> ``ParseError`` (an unknown tier would be guessed into a
kind). A row's own price or GPU count unreadable (missing, no number, zero or negative) -> that
offer is quarantined, the book is kept. A machine id listed twice is read once.
"""

from __future__ import annotations

from typing import Any

from scrapers.base import (
    REFERENCE_CAPTURE,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    dig,
    field_path,
    number,
    read_count,
    read_price,
    require_text,
    unreadable,
)

URL = "https://lium.io/api/executors"
#: Lium's tier -> our kind.
TIERS = {"secure": "on_demand", "spot": "spot"}


class LiumScraper(Scraper):
    name = "lium"
    segment = "marketplace"
    display_name = "Lium"
    homepage = "https://lium.io"
    endpoint = "GET https://lium.io/api/executors (keyless JSON, the whole machine book)"
    kinds = ("on_demand", "spot")
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = REFERENCE_CAPTURE
    caveats = (
        "reference fixture (real 2026 shape, own values); marketplace: one offer per machine at its owner's price (per GPU x the machine's GPUs); "
        "available = free GPUs now; region is the machine's country; USD by the site's prints (no currency field)"
    )

    async def fetch(self, http: Http) -> Any:
        return await http.get_json(URL, headers={"Accept": "application/json"})

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, list):
            raise ParseError(f"{self.name}: payload should be a JSON list of executors, got {type(raw).__name__}")
        if not raw:
            raise ParseError(f"{self.name}: payload is an empty executor book")
        offers: list[ScrapedOffer] = []
        seen: set[str] = set()
        for index, row in enumerate(raw):
            offer = self._row_offer(row, index)
            if offer.sku in seen:
                continue  # the same machine twice: read once
            seen.add(offer.sku)
            offers.append(offer)
        return offers


    def _row_offer(self, row: Any, index: int) -> ScrapedOffer:
        at = field_path("payload", index)
        if not isinstance(row, dict):
            raise ParseError(f"{self.name}: {at} should be an object, got {type(row).__name__}")
        machine = require_text(row, "id", provider=self.name, at=at)
        gpu_name = require_text(row, "machine_name", provider=self.name, at=at)
        tier = require_text(row, "tier", provider=self.name, at=at)
        kind = TIERS.get(tier.lower())
        if kind is None:
            raise ParseError(f"{self.name}: {field_path(at, 'tier')} is {tier!r}, not one of {', '.join(TIERS)}")
        per_gpu, bad = read_price(row, "price_per_gpu", at=at, strings=False)
        if per_gpu == 0:
            per_gpu, bad = None, unreadable("price", field_path(at, "price_per_gpu"), 0, "a zero price")
        count, bad_count = read_count(row, "gpu_count", at=at, zero=False, strings=False)
        bad = bad or bad_count
        free = row.get("available_gpu_count")
        free = int(free) if number(free) is not None and free >= 0 else None
        location = row.get("location") if isinstance(row.get("location"), dict) else {}
        country = location.get("country_code") if isinstance(location.get("country_code"), str) else None
        whole = None if per_gpu is None or bad_count else round(per_gpu * count, 6)
        return self.offer(
            sku=machine,
            gpu_raw=gpu_name,
            gpu_count=count if not bad_count else 1,
            price_per_hour=whole,
            kind=kind,
            region=country or "",
            country=country,
            currency="USD",
            available=None if free is None else free > 0,
            available_count=free,
            extra={
                "price_per_gpu_hour": per_gpu,
                "available_count": free,
                **({"fractional_gpu": True} if not bad_count and count != int(count) else {}),
                "lium_tier": tier,
                "is_spot": dig(row, "specs", "is_spot"),
                "min_gpu_count_for_rental": row.get("min_gpu_count_for_rental"),
                "is_whole_host_free": row.get("is_whole_host_free"),
                "reliability_score": row.get("reliability_score"),
                "city": location.get("city"),
                "region_name": location.get("region_name"),
                "pending_price_per_gpu_hour": row.get("pending_price_per_hour"),
                "price_change_effective_date": row.get("price_change_effective_date"),
                **bad,
            },
        )
