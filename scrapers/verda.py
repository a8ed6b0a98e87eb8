"""Verda (formerly DataCrunch): GPU instance prices from the public pricing page, or from the API
when keys are set.

Two sources, one per run, never both (so no offer is counted twice):

* **No keys (the default)**: ``GET https://verda.com/pricing`` once, after checking robots.txt.
  The page carries a schema.org JSON-LD graph (``<script type="application/ld+json">``, an
  ``@graph`` list) with one ``Offer`` per price. Read: every ``Offer`` whose name is
  ``"<N>x <GPU> on-demand"`` or ``"<N>x <GPU> spot"`` and whose description says it is an
  *instance* price ("Hourly on-demand instance price"); ``price`` (a JSON number, also in
  ``priceSpecification``), ``priceCurrency`` and ``priceSpecification.unitText`` ("hour"). The
  price is for the whole instance of N GPUs (the page lists "1x" instances: one GPU each).
  Skipped: instant-cluster, serverless-container ("... serverless spot") and storage offers,
  and CPU instances (their offer names are empty or carry no "Nx" count). One offer per
  instance and kind: ``sku`` "1x H100 SXM5 80GB", ``gpu_raw`` "H100 SXM5 80GB",
  ``gpu_memory_gb`` from the name, no region (the page names none). The page lists some
  instances twice (variants of one GPU type); such a pair is one offer at the lower price,
  every listed price kept in ``extra["prices_listed"]``. A unit other than per hour or a price
  that is no number quarantines that offer with the field named. No JSON-LD block, or no
  instance offer in it -> ``ParseError("verda: layout changed: ...")``.
* **With ``VERDA_CLIENT_ID`` and ``VERDA_CLIENT_SECRET`` set** (the richer path: instance type
  names, regions, availability, vCPUs and RAM): the public cloud API (base
  ``https://api.verda.com/v1``, formerly ``https://api.datacrunch.io/v1``; the same calls the
  official ``verda`` Python SDK makes):

  1. ``POST /oauth2/token`` with the JSON body ``{"grant_type": "client_credentials",
     "client_id": $VERDA_CLIENT_ID, "client_secret": $VERDA_CLIENT_SECRET}`` -> ``access_token``.
  2. With ``Authorization: Bearer <access_token>``:
     ``GET /instance-types`` (every type with its prices),
     ``GET /instance-availability?isSpot=false`` and ``?isSpot=true`` (per location, the instance
     types that can be deployed now, on demand resp. as spot), and ``GET /locations``
     (code, name, country).

  The two sources name instances differently (the API's "1H100.80S.30V" per location, the
  page's "1x H100 SXM5 80GB" without one), so a store that switches source sees one set of
  offers end and the other begin; within a run only one source is read. Replay always reads the
  page (its recording is the page).

The secret is only ever sent in the token request body; errors raised here name the URL path,
never a header, body or the token.

API keys relied on: ``instance_types[].instance_type``, ``.price_per_hour`` and ``.spot_price``
(decimal *strings*, per whole instance, in ``.currency``, lower-case "usd"),
``.gpu.number_of_gpus``, ``.gpu.description`` ("1x H100 SXM5 80GB"),
``.gpu_memory.size_in_gigabytes`` (total), ``.cpu.number_of_cores``, ``.memory.size_in_gigabytes``;
``availability[].location_code`` and ``.availabilities[]`` (instance-type names);
``locations[].code`` and ``.country_code``.

API offers: one per GPU instance type x location x kind (``on_demand`` from ``price_per_hour``,
``spot`` from ``spot_price``; a null/zero spot price means no spot offer). The locations of a type
are those where either availability list names it; ``available`` says whether that kind's list
does. A type that no location lists right now is still emitted once per kind with region ``""``
and ``available=False`` so its price is recorded. CPU-only types (0 GPUs) are skipped.
``gpu_raw`` is the GPU description without its "Nx " count prefix. A type whose price (or GPU
count) is missing, no number or negative gives offers that are quarantined with the field named;
the other types are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from scrapers.base import (
    UNREADABLE_PRICE,
    FetchError,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    dig,
    number,
    positive,
    read_count,
    read_price,
    require,
    unreadable,
)

API = "https://api.verda.com/v1"
TOKEN_URL = f"{API}/oauth2/token"
PRICING_URL = "https://verda.com/pricing"
_COUNT_PREFIX = re.compile(r"^\s*\d+\s*x\s+", re.IGNORECASE)
#: "1x H100 SXM5 80GB on-demand" / "8x B200 SXM6 180GB spot": an instance offer's name.
_INSTANCE_OFFER = re.compile(r"^\s*(\d+)\s*x\s+(\S.*?)\s+(on-demand|spot)\s*$", re.IGNORECASE)
_KINDS = {"on-demand": "on_demand", "spot": "spot"}
#: Words of an offer that is not a GPU instance (clusters, serverless containers).
_NOT_INSTANCE = re.compile(r"\b(?:serverless|container|cluster)\b", re.IGNORECASE)
_HOURLY_UNITS = frozenset({"hour", "hours", "hr", "h", "per hour", "hur"})  # "HUR": the UN/CEFACT code


def _offer_nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every JSON-LD node typed ``Offer`` in ``node`` (a graph, a list or one node), depth first."""
    if isinstance(node, list):
        for item in node:
            yield from _offer_nodes(item)
    elif isinstance(node, dict):
        kind = node.get("@type")
        if kind == "Offer" or (isinstance(kind, list) and "Offer" in kind):
            yield node
            return
        for value in node.values():
            if isinstance(value, (dict, list)):
                yield from _offer_nodes(value)


class VerdaScraper(Scraper):
    name = "verda"
    segment = "neocloud"
    display_name = "Verda (DataCrunch)"
    homepage = "https://verda.com"
    endpoint = (
        f"GET {PRICING_URL} (JSON-LD offers, no key); with keys: POST https://api.verda.com/v1/oauth2/token; "
        "GET /v1/instance-types, /v1/instance-availability?isSpot=false|true, /v1/locations"
    )
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = "reference: the 2026 JSON-LD shape of verda.com/pricing (structure only, own values)"
    optional_credentials = ("VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET")
    kinds = ("on_demand", "spot")
    caveats = (
        "list prices per instance (storage extra); without keys from the pricing page's JSON-LD (no region); "
        "with keys from the API, a region only where the availability API currently offers the type "
        "(otherwise no region and available=false)"
    )

    def keyed(self) -> bool:
        """Whether this run reads the API: both keys set, and not a replay (whose recording is the page)."""
        return not self.replay and all(self.env.get(n) for n in self.optional_credentials)

    async def fetch(self, http: Http) -> Any:
        if not self.keyed():
            return await http.get_page(PRICING_URL)
        return await self._fetch_api(http)

    async def _fetch_api(self, http: Http) -> dict[str, Any]:
        token_response = await http.post_json(
            TOKEN_URL,
            json={
                "grant_type": "client_credentials",
                "client_id": self.credential("VERDA_CLIENT_ID"),
                "client_secret": self.credential("VERDA_CLIENT_SECRET"),
            },
        )
        token = token_response.get("access_token") if isinstance(token_response, dict) else None
        if not isinstance(token, str) or not token:
            # Never echo the response: it could carry the request back.
            raise FetchError(f"{self.name}: POST {TOKEN_URL} returned no access_token")
        self.remember_secret(token)
        headers = {"Authorization": f"Bearer {token}"}
        return {
            "instance_types": await http.get_json(f"{API}/instance-types", headers=headers),
            "availability": {
                "on_demand": await http.get_json(f"{API}/instance-availability", params={"isSpot": "false"}, headers=headers),
                "spot": await http.get_json(f"{API}/instance-availability", params={"isSpot": "true"}, headers=headers),
            },
            "locations": await http.get_json(f"{API}/locations", headers=headers),
        }

    # --- parse -------------------------------------------------------------------------

    @staticmethod
    def _price(item: dict[str, Any], key: str, where: str, *, required: bool = False) -> tuple[float | None, dict[str, str]]:
        """Decimal string/number -> (float, {}); ``None`` for null, "" or zero (not offered); missing
        (when ``required``), no number or negative -> the reason in the extra, so that offer alone is
        quarantined."""
        if key not in item and not required:
            return None, {}
        price, bad = read_price(item, key, at=where)
        return (price or None) if not bad else price, bad

    def _availability(self, raw: Any, kind: str) -> dict[str, set[str]]:
        entries = require(raw, "availability", kind, provider=self.name, kind=list)
        where: dict[str, set[str]] = {}
        for i, entry in enumerate(entries):
            code = require(entry, "location_code", provider=self.name, kind=str)
            types = require(entry, "availabilities", provider=self.name, kind=list)
            for itype in types:
                if not isinstance(itype, str):
                    raise ParseError(f"{self.name}: availability.{kind}[{i}].availabilities holds {itype!r}")
                where.setdefault(itype, set()).add(code)
        return where

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if isinstance(raw, (str, bytes)):
            return self._parse_page(raw)
        return self._parse_api(raw)

    # --- the pricing page's JSON-LD --------------------------------------------------------

    def _parse_page(self, raw: str | bytes) -> list[ScrapedOffer]:
        from scrapers.html import layout_changed, page_soup, parse_gb

        doc = page_soup(self.name, raw)
        scripts = doc.find_all("script", attrs={"type": "application/ld+json"})
        if not scripts:
            raise layout_changed(self.name, "no JSON-LD block (<script type='application/ld+json'>) on the pricing page")
        nodes: list[dict[str, Any]] = []
        unreadable_blocks = 0
        for script in scripts:
            try:
                nodes.extend(_offer_nodes(json.loads(script.get_text())))
            except ValueError:
                unreadable_blocks += 1
        offers: dict[tuple[str, str], ScrapedOffer] = {}
        for node in nodes:
            name = node.get("name")
            match = _INSTANCE_OFFER.match(name) if isinstance(name, str) else None
            description = str(node.get("description") or "")
            if match is None or _NOT_INSTANCE.search(f"{match.group(2)} {description}"):
                continue  # a cluster, a serverless container, storage, a CPU instance (no "Nx" name)
            if description and "instance" not in description.lower():
                continue
            gpu_raw, kind = match.group(2).strip(), _KINDS[match.group(3).lower()]
            offer = self._page_offer(node, f"Offer {name.strip()!r}", int(match.group(1)[:5]), gpu_raw, kind, parse_gb(gpu_raw))
            key = (offer.sku, offer.kind)
            offers[key] = self._one_of(offers[key], offer) if key in offers else offer
        if not offers:
            why = f" ({unreadable_blocks} JSON-LD block(s) are not valid JSON)" if unreadable_blocks else ""
            raise layout_changed(self.name, f"no GPU instance 'Offer' named '<N>x <GPU> on-demand' or '... spot' in the pricing page's JSON-LD{why}")
        return list(offers.values())

    def _page_offer(
        self, node: dict[str, Any], where: str, count: int, gpu_raw: str, kind: str, memory: float | None
    ) -> ScrapedOffer:
        spec = node.get("priceSpecification") if isinstance(node.get("priceSpecification"), dict) else {}
        price, bad = read_price(node if "price" in node else spec, "price", at=where if "price" in node else f"{where}.priceSpecification")
        unit = spec.get("unitText")
        if not bad and unit is not None and str(unit).strip().lower() not in _HOURLY_UNITS:
            bad = unreadable("price", f"{where}.priceSpecification.unitText", unit, "not per hour")
        currency = str(node.get("priceCurrency") or spec.get("priceCurrency") or "USD").strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", currency):
            bad = bad or unreadable("price", f"{where}.priceCurrency", currency, "not an ISO currency code")
            currency = "USD"
        if not 0 < count <= 1024:  # "0x ..." or a count no instance has: this offer is quarantined
            count, bad = 0, unreadable("GPU count", f"{where}.name", node.get("name"), "not a plausible count")
        extra: dict[str, Any] = {"price_basis": "per instance-hour", "source": "pricing page JSON-LD", **bad}
        if isinstance(node.get("@id"), str):
            extra["offer_id"] = node["@id"]
        return self.offer(
            sku=f"{count}x {gpu_raw}",
            gpu_raw=gpu_raw,
            gpu_count=count,
            gpu_memory_gb=memory,
            kind=kind,
            price_per_hour=price,
            currency=currency,
            extra=extra,
        )

    @staticmethod
    def _one_of(kept: ScrapedOffer, other: ScrapedOffer) -> ScrapedOffer:
        """One offer for an instance the page lists twice: the readable one at the lower price,
        every listed price in ``extra["prices_listed"]``."""
        listed = sorted({p for o in (kept, other) for p in (o.extra.get("prices_listed") or [o.price_per_hour]) if p is not None})
        readable = [o for o in (kept, other) if not o.extra.get(UNREADABLE_PRICE) and o.price_per_hour is not None]
        best = min(readable, key=lambda o: o.price_per_hour or 0.0) if readable else kept
        if len(listed) > 1:
            return replace(best, extra={**best.extra, "prices_listed": listed})
        return best

    # --- the API -----------------------------------------------------------------------------

    def _parse_api(self, raw: Any) -> list[ScrapedOffer]:
        types = require(raw, "instance_types", provider=self.name, kind=list)
        if not types:
            raise ParseError(f"{self.name}: instance_types is empty")
        locations = require(raw, "locations", provider=self.name, kind=list)
        country = {
            require(loc, "code", provider=self.name, kind=str): loc.get("country_code") or None for loc in locations
        }
        available = {kind: self._availability(raw, kind) for kind in ("on_demand", "spot")}

        offers: list[ScrapedOffer] = []
        for i, item in enumerate(types):
            where = f"instance_types[{i}]"
            itype = require(item, "instance_type", provider=self.name, kind=str)
            gpus, bad_count = read_count(item, "gpu", "number_of_gpus", at=where)
            if not gpus and not bad_count:
                continue  # CPU node
            description = require(item, "gpu", "description", provider=self.name, kind=str)
            gpu_raw = _COUNT_PREFIX.sub("", description).strip() or str(item.get("name") or itype)
            total_vram = positive(dig(item, "gpu_memory", "size_in_gigabytes"))
            currency = str(item.get("currency") or "usd").upper()
            prices = {
                "on_demand": self._price(item, "price_per_hour", where, required=True),
                "spot": self._price(item, "spot_price", where),
            }
            regions = sorted(available["on_demand"].get(itype, set()) | available["spot"].get(itype, set()))
            extra = {k: v for k, v in (("p2p", item.get("p2p")), ("storage", dig(item, "storage", "description"))) if v}
            for kind, (price, bad) in prices.items():
                if price is None and not bad:
                    continue
                bad = bad_count or bad
                for region in regions or [""]:
                    offers.append(
                        self.offer(
                            sku=itype,
                            gpu_raw=gpu_raw,
                            gpu_count=gpus,
                            gpu_memory_gb=total_vram / gpus if total_vram and gpus > 0 else None,
                            vcpus=number(dig(item, "cpu", "number_of_cores")),
                            ram_gb=number(dig(item, "memory", "size_in_gigabytes")),
                            kind=kind,
                            price_per_hour=price,
                            currency=currency,
                            region=region,
                            country=country.get(region) if region else None,
                            available=region in available[kind].get(itype, set()),
                            extra={**extra, **bad},
                        )
                    )
        return offers
