"""Scaleway GPU Instances from the public Instance product catalog and its stock (no auth).

Requests, for each zone in ``DEFAULT_ZONES`` (or a comma-separated list in ``$SCALEWAY_ZONES``)
    ``GET https://api.scaleway.com/instance/v1/zones/{zone}/products/servers?per_page=100&page=N``
    (the types and their prices) and
    ``GET https://api.scaleway.com/instance/v1/zones/{zone}/products/servers/availability?per_page=100&page=N``
    (the stock of each type). Both page: a ``Link`` header with ``rel="next"`` while more pages
    exist (and ``X-Total-Count``); ``fetch`` follows the next page number it names, at most
    ``MAX_PAGES`` pages per list, and returns ``{zone: {"servers": [page, ...], "availability":
    [page, ...]}}``.

Zones
    Every Instance zone, as 2026 clients list them (skypilot's Scaleway catalog fetcher walks the
    SDK's ``ALL_ZONES``): fr-par-1/2/3, nl-ams-1/2/3, pl-waw-1/2/3. Most GPU types (H100 PCIe and
    SXM, L40S, B300) are in **fr-par-2**, the zone getcomputable/gpu-index's 2026 observatory reads
    (products and availability). A zone whose catalog cannot be fetched (an error, a zone that
    no longer answers) does not fail the run: its error is kept as ``{"error": ...}`` and ``parse``
    returns the other zones' offers as ``PartialOffers`` (that zone's offers stay unknown, never
    delisted); every zone failing is the run's ``FetchError``. A zone whose stock cannot be read
    keeps its prices, with ``available`` unknown.

Response
    ``{"servers": {"<commercial type>": {ncpus, ram (bytes), gpu (count), gpu_info:
    {gpu_manufacturer, gpu_name, gpu_memory (bytes per GPU)}, hourly_price, monthly_price,
    end_of_service, ...}}}``. Types with ``gpu`` = 0 are CPU instances and are skipped.
    Availability: ``{"servers": {"<commercial type>": {"availability": "available" | "scarce" |
    "shortage" | "unknown_availability"}}}``; ``extra["stock"]`` keeps the level and ``available``
    is true for "available" and "scarce", false for "shortage" (none left), None otherwise.

Prices
    ``hourly_price`` is the whole instance's hourly price in **EUR**, although the payload has no
    currency field (Scaleway bills in euros; its pricing pages print €). Offers carry
    ``currency="EUR"`` and nothing is converted here: the pipeline's ``currency_rates`` setting
    turns EUR into USD when a rate is configured, and keeps EUR (saying so) when not. A GPU type
    whose ``hourly_price`` (or ``gpu`` count) is missing, no number or negative is quarantined with
    the field named, the other types are kept; 0 is passed on for the validate stage to quarantine.

Names
    ``gpu_raw`` is "<gpu_manufacturer> <gpu_name>" ("NVIDIA L4", "NVIDIA H100-PCIe"); a GPU type
    without ``gpu_info`` keeps its commercial type as ``gpu_raw`` ("GPU-3070-S"). One offer per
    (zone, commercial type), ``region`` the zone and ``country`` its first two letters.
    ``end_of_service`` types are kept with ``extra["end_of_service"] = True``.

``parse`` also takes the older ``{zone: [page, ...]}`` (products only).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Final

from scrapers.base import (
    STOCK_LEVEL,
    FetchError,
    Http,
    ParseError,
    PartialOffers,
    ScrapedOffer,
    Scraper,
    positive,
    read_count,
    read_price,
    require,
)
from tracker.errors import ConfigError

if TYPE_CHECKING:
    import httpx

API: Final = "https://api.scaleway.com/instance/v1/zones"
DEFAULT_ZONES: Final = (
    "fr-par-1", "fr-par-2", "fr-par-3", "nl-ams-1", "nl-ams-2", "nl-ams-3", "pl-waw-1", "pl-waw-2", "pl-waw-3",
)
#: What each availability level says about stock: "scarce" is still rentable, "shortage" is not.
AVAILABLE: Final = {"available": True, "scarce": True, "shortage": False}
ZONES_ENV: Final = "SCALEWAY_ZONES"
PER_PAGE: Final = 100
MAX_PAGES: Final = 10
_ZONE_RE: Final = re.compile(r"^[a-z]{2}-[a-z]{3}-\d$")
_NEXT_RE: Final = re.compile(r"<([^>]*)>\s*;\s*rel=\"?next\"?")
_PAGE_RE: Final = re.compile(r"[?&]page=(\d+)")
GIB: Final = 1024**3


def products_url(zone: str) -> str:
    return f"{API}/{zone}/products/servers"


def availability_url(zone: str) -> str:
    return f"{API}/{zone}/products/servers/availability"


def next_page(response: httpx.Response) -> int | None:
    """The page number the ``Link: <...?page=N...>; rel="next"`` header names, if any."""
    link = response.headers.get("link", "")
    match = _NEXT_RE.search(link)
    if not match:
        return None
    page = _PAGE_RE.search(match.group(1))
    return int(page.group(1)) if page else None


class ScalewayScraper(Scraper):
    name: ClassVar[str] = "scaleway"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "Scaleway"
    homepage: ClassVar[str] = "https://www.scaleway.com/en/pricing/gpu/"
    endpoint: ClassVar[str] = f"GET {API}/{{zone}}/products/servers[/availability]?per_page=100 (zones: $SCALEWAY_ZONES)"
    source_kind: ClassVar[str] = "api"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = "reference: the 2026 fr-par-2 shape of getcomputable/gpu-index's observatory capture (structure only, own values)"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    caveats: ClassVar[str] = (
        "prices are EUR per instance-hour (no currency in the payload); converted to USD only with "
        "a configured currency_rates.EUR; every zone (fr-par-1/2/3, nl-ams-1/2/3, pl-waw-1/2/3); "
        "available from the zone's stock (scarce counts as available)"
    )

    def zones(self) -> list[str]:
        configured = [z for z in re.split(r"[\s,]+", self.env.get(ZONES_ENV, "")) if z]
        zones = configured or list(DEFAULT_ZONES)
        bad = [z for z in zones if not _ZONE_RE.match(z)]
        if bad:
            raise ConfigError(f"scaleway: {ZONES_ENV} has an invalid zone {bad[0]!r} (expected e.g. fr-par-2)")
        return list(dict.fromkeys(zones))

    async def fetch(self, http: Http) -> dict[str, dict[str, Any]]:
        fetched: dict[str, dict[str, Any]] = {}
        first_error: FetchError | None = None
        for zone in self.zones():
            try:
                servers = await self._pages(http, products_url(zone), zone)
            except FetchError as exc:  # this zone is unknown this time; the others still count
                first_error = first_error or exc
                fetched[zone] = {"error": str(exc)}
                continue
            entry: dict[str, Any] = {"servers": servers}
            try:
                entry["availability"] = await self._pages(http, availability_url(zone), f"{zone} availability")
            except FetchError as exc:  # prices without stock: available stays unknown
                entry["availability_error"] = str(exc)
            fetched[zone] = entry
        if first_error is not None and all("error" in entry for entry in fetched.values()):
            raise first_error
        return fetched

    async def _pages(self, http: Http, url: str, what: str) -> list[Any]:
        pages: list[Any] = []
        page = 1
        for _ in range(MAX_PAGES):
            response = await http.request("GET", url, params={"per_page": str(PER_PAGE), "page": str(page)})
            try:
                pages.append(response.json())
            except ValueError:
                raise FetchError(f"{self.name}: GET {url} page {page} did not return JSON") from None
            following = next_page(response)
            if following is None:
                return pages
            if following <= page:
                raise FetchError(f"{self.name}: {what} page {page} links back to page {following}")
            page = following
        raise FetchError(f"{self.name}: {what} did not end after {MAX_PAGES} pages")

    # -- parse --------------------------------------------------------------------------------
    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, dict) or not raw:
            raise ParseError(f"{self.name}: payload should be {{zone: {{servers, availability}}}}, got {type(raw).__name__}")
        offers: list[ScrapedOffer] = []
        types_seen = 0
        failed: list[str] = []
        for zone, entry in raw.items():
            if isinstance(entry, dict) and "error" in entry:
                failed.append(f"{zone} ({entry['error']})")
                continue
            pages = entry.get("servers") if isinstance(entry, dict) else entry
            stock = self._stock(zone, entry.get("availability") if isinstance(entry, dict) else None)
            for page in pages if isinstance(pages, list) else [pages]:
                servers = require(page, "servers", provider=self.name, kind=dict, at=zone)
                types_seen += len(servers)
                for commercial_type, spec in servers.items():
                    offer = self._offer(zone, commercial_type, spec, stock.get(commercial_type))
                    if offer is not None:
                        offers.append(offer)
        if not offers:
            where = ", ".join(z for z in raw if z not in {f.split(" ")[0] for f in failed}) or "no zone"
            raise ParseError(f"{self.name}: no GPU type among {types_seen} server types in {where}")
        if failed:
            return PartialOffers(offers, reason=f"{self.name}: {len(failed)} zone(s) did not answer: " + "; ".join(failed)[:400])
        return offers

    def _stock(self, zone: str, pages: Any) -> dict[str, str]:
        """The availability level of each commercial type in ``zone`` (empty when not fetched)."""
        levels: dict[str, str] = {}
        for page in pages if isinstance(pages, list) else ([] if pages is None else [pages]):
            servers = require(page, "servers", provider=self.name, kind=dict, at=f"{zone} availability")
            for commercial_type, state in servers.items():
                level = state.get("availability") if isinstance(state, dict) else None
                if isinstance(level, str) and level:
                    levels[commercial_type] = level
        return levels

    def _offer(self, zone: str, commercial_type: str, spec: Any, stock: str | None = None) -> ScrapedOffer | None:
        if not isinstance(spec, dict):
            raise ParseError(f"{self.name}: {zone} type {commercial_type} should be an object, got {type(spec).__name__}")
        at = f"{zone} servers.{commercial_type}"
        # a GPU count or price that is missing, no number or negative quarantines this type, not the run
        gpus, bad = read_count(spec, "gpu", at=at, strings=False)
        if not gpus and not bad:
            return None
        price, bad_price = read_price(spec, "hourly_price", at=at, required=True, strings=False)
        bad = bad or bad_price
        info = spec.get("gpu_info")
        memory: float | None = None
        if isinstance(info, dict) and info.get("gpu_name"):
            gpu_raw = " ".join(str(p) for p in (info.get("gpu_manufacturer"), info["gpu_name"]) if p)
            if gpu_memory := positive(info.get("gpu_memory")):
                memory = round(gpu_memory / GIB, 2)
        else:
            gpu_raw = commercial_type
        ram = positive(spec.get("ram"))
        extra: dict[str, Any] = {"monthly_price": spec.get("monthly_price"), "price_basis": "per instance-hour", **bad}
        if spec.get("end_of_service"):
            extra["end_of_service"] = True
        if spec.get("mig_profile"):
            extra["mig_profile"] = spec["mig_profile"]
        if stock is not None:
            extra[STOCK_LEVEL] = stock
        return self.offer(
            sku=commercial_type,
            gpu_raw=gpu_raw,
            gpu_count=gpus,
            price_per_hour=price,
            currency="EUR",
            region=zone,
            country=zone[:2].upper(),
            gpu_memory_gb=memory,
            vcpus=positive(spec.get("ncpus")),
            ram_gb=round(ram / GIB, 2) if ram else None,
            available=AVAILABLE.get(stock) if stock is not None else None,
            extra=extra,
        )
