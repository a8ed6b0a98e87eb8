"""Verda (formerly DataCrunch) public cloud API: instance types, prices and where they can be deployed.

Requests (base ``https://api.verda.com/v1``, formerly ``https://api.datacrunch.io/v1``; the same
calls the official ``verda`` Python SDK makes):

1. ``POST /oauth2/token`` with the JSON body ``{"grant_type": "client_credentials",
   "client_id": $VERDA_CLIENT_ID, "client_secret": $VERDA_CLIENT_SECRET}`` -> ``access_token``.
2. With ``Authorization: Bearer <access_token>``:
   ``GET /instance-types`` (every type with its prices),
   ``GET /instance-availability?isSpot=false`` and ``?isSpot=true`` (per location, the instance
   types that can be deployed now, on demand resp. as spot), and ``GET /locations``
   (code, name, country).

The secret is only ever sent in the token request body; errors raised here name the URL path,
never a header, body or the token.

Keys relied on: ``instance_types[].instance_type``, ``.price_per_hour`` and ``.spot_price`` (decimal
*strings*, per whole instance, in ``.currency``, lower-case "usd"), ``.gpu.number_of_gpus``,
``.gpu.description`` ("1x H100 SXM5 80GB"), ``.gpu_memory.size_in_gigabytes`` (total),
``.cpu.number_of_cores``, ``.memory.size_in_gigabytes``; ``availability[].location_code`` and
``.availabilities[]`` (instance-type names); ``locations[].code`` and ``.country_code``.

Offers: one per GPU instance type x location x kind (``on_demand`` from ``price_per_hour``,
``spot`` from ``spot_price``; a null/zero spot price means no spot offer). The locations of a type
are those where either availability list names it; ``available`` says whether that kind's list
does. A type that no location lists right now is still emitted once per kind with region ``""``
and ``available=False`` so its price is recorded. CPU-only types (0 GPUs) are skipped.
``gpu_raw`` is the GPU description without its "Nx " count prefix. A type whose price (or GPU
count) is missing, no number or negative gives offers that are quarantined with the field named;
the other types are kept.
"""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import (
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
)

API = "https://api.verda.com/v1"
TOKEN_URL = f"{API}/oauth2/token"
_COUNT_PREFIX = re.compile(r"^\s*\d+\s*x\s+", re.IGNORECASE)


class VerdaScraper(Scraper):
    name = "verda"
    display_name = "Verda (DataCrunch)"
    homepage = "https://verda.com"
    endpoint = (
        "POST https://api.verda.com/v1/oauth2/token; GET /v1/instance-types, "
        "/v1/instance-availability?isSpot=false|true, /v1/locations"
    )
    source_kind = "api"
    fixture_kind = "handmade"
    credentials = ("VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET")
    kinds = ("on_demand", "spot")
    caveats = (
        "prices are list prices per instance (storage extra); a region is listed only where the "
        "availability API currently offers the type, otherwise the offer has no region and available=false"
    )

    async def fetch(self, http: Http) -> dict[str, Any]:
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
