"""Vast.ai marketplace offers from the public bundles search.

Request: ``POST https://console.vast.ai/api/v0/bundles/`` with the JSON query the ``vastai search
offers --raw verified=any`` CLI sends: ``rentable == true``, ``rented == false``, ``external ==
false``, no ``verified`` filter (verified, unverified and deverified hosts alike), ``type``
``"on-demand"``, ``allocated_storage`` 5 GB, ordered by score, ``limit`` ``MAX_OFFERS``. The
search answers every match in one body (no pagination). Auth: none needed; when
``$VAST_API_KEY`` is set it is sent as ``Authorization: Bearer <key>``. ``fetch`` returns the
decoded body: ``{"offers": [...]}`` from the API; ``parse`` also takes the bare list the CLI
prints (which is what the recorded samples are).

What is extracted, per offer (one machine's slice of ``num_gpus`` GPUs):

* ``on_demand``: ``price_per_hour`` = ``dph_base``, the compute price of the whole offer. Storage
  is billed on top (``dph_total`` = ``dph_base`` + ``storage_total_cost``) and is kept in
  ``extra`` (``storage_per_gb_month`` = ``storage_cost``, ``storage_per_hour`` =
  ``storage_total_cost`` for the 5 GB asked for) but never added to the price.
* ``spot``: ``min_bid``, the interruptible bid floor of the same offer, as a second offer with the
  same sku; skipped when ``min_bid`` is null or 0 (no bidding on that offer). Vast sometimes
  lists a floor above ``dph_base``; it is passed on as listed (validation judges it).

Keys relied on: ``id`` (sku), ``gpu_name`` (gpu_raw), ``num_gpus``, ``gpu_ram`` (MiB per GPU ->
``gpu_memory_gb`` in GiB), ``dph_base``; optional ``min_bid``, ``cpu_cores_effective`` (the
offer's vCPU share), ``cpu_ram`` (the offer's RAM share in MiB), ``geolocation`` (free text
``"<state or country name>, <ISO country>"``: the whole text is the region, the part after the
last comma the country), ``rentable``/``rented`` (available), ``verification`` ("verified",
"unverified", "deverified"; ``extra["verified"]`` is true only for "verified"),
``hosting_type`` (1 = datacenter), ``reliability2``, ``machine_id``, ``host_id``.
"""

from __future__ import annotations

import re
from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    number,
    read_count,
    read_price,
    require,
)

BUNDLES_URL = "https://console.vast.ai/api/v0/bundles/"
#: The CLI's own "everything" limit; the whole market is a few thousand offers.
MAX_OFFERS = 65535
MIB_PER_GIB = 1024

_COUNTRY = re.compile(r"^[A-Z]{2}$")


def search_query() -> dict[str, Any]:
    """The bundles search body: every rentable, unrented on-demand offer, any verification."""
    return {
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "external": {"eq": False},
        "type": "on-demand",
        "order": [["score", "desc"]],
        "allocated_storage": 5.0,
        "limit": MAX_OFFERS,
    }


def split_geolocation(geolocation: Any) -> tuple[str, str | None]:
    """``"Alberta, CA"`` -> ``("Alberta, CA", "CA")``; ``", US"`` -> ``("US", "US")``; None -> ``("", None)``."""
    if not isinstance(geolocation, str):
        return "", None
    parts = [p.strip() for p in geolocation.split(",")]
    parts = [p for p in parts if p]
    if not parts:
        return "", None
    country = parts[-1].upper() if _COUNTRY.match(parts[-1].upper()) else None
    return ", ".join(parts), country


_number = number


class VastaiScraper(Scraper):
    name = "vastai"
    display_name = "Vast.ai"
    homepage = "https://vast.ai/pricing"
    endpoint = "POST https://console.vast.ai/api/v0/bundles/"
    source_kind = "api"
    fixture_kind = "recording"
    optional_credentials = ("VAST_API_KEY",)
    kinds = ("on_demand", "spot")
    caveats = (
        "marketplace: one offer per host slice, prices set by hosts; price excludes storage "
        "(kept in extra); spot is the interruptible bid floor"
    )

    async def fetch(self, http: Http) -> Any:
        headers = {"Accept": "application/json"}
        key = self.credential("VAST_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return await http.post_json(BUNDLES_URL, json=search_query(), headers=headers)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if isinstance(raw, dict):
            offers = require(raw, "offers", provider=self.name, kind=list)
        elif isinstance(raw, list):
            offers = raw
        else:
            raise ParseError(f"{self.name}: payload should be {{'offers': [...]}} or a list, got {type(raw).__name__}")
        if not offers:
            raise ParseError(f"{self.name}: the search returned no offers")

        result: list[ScrapedOffer] = []
        seen: set[str] = set()
        for index, item in enumerate(offers):
            if not isinstance(item, dict):
                raise ParseError(f"{self.name}: offers[{index}] should be an object, got {type(item).__name__}")
            offer_id = item.get("id")
            if isinstance(offer_id, bool) or not isinstance(offer_id, (int, str)) or not str(offer_id).strip():
                raise ParseError(f"{self.name}: offers[{index}] ({_describe(item)}) has no usable 'id', got {offer_id!r}")
            sku = str(offer_id)
            if sku in seen:  # the same ask listed twice is one offer
                continue
            seen.add(sku)
            where = f"offers[{index}] (id {sku})"
            gpu_name = item.get("gpu_name")
            if not isinstance(gpu_name, str):
                raise ParseError(f"{self.name}: {where} has no gpu_name string")
            at = field_path("offers", index)
            num_gpus, bad_count = read_count(item, "num_gpus", at=at)
            price, bad_price = read_price(item, "dph_base", at=at)
            bad_price = bad_count or bad_price
            gpu_ram = _number(item.get("gpu_ram"))
            cpu_ram = _number(item.get("cpu_ram"))
            region, country = split_geolocation(item.get("geolocation"))
            rentable, rented = item.get("rentable"), item.get("rented")
            available = None if rentable is None and rented is None else bool(rentable) and not rented
            verification = item.get("verification")
            extra = {
                "verified": verification == "verified" if isinstance(verification, str) else None,
                "verification": verification,
                "datacenter": item.get("hosting_type") == 1 if "hosting_type" in item else None,
                "reliability": item.get("reliability2", item.get("reliability")),
                "machine_id": item.get("machine_id"),
                "host_id": item.get("host_id"),
                "storage_per_gb_month": item.get("storage_cost"),
                "storage_per_hour": item.get("storage_total_cost"),
                "dph_total": item.get("dph_total"),
            }
            extra = {k: v for k, v in extra.items() if v is not None}
            common: dict[str, Any] = {
                "sku": sku,
                "gpu_raw": gpu_name.strip() or gpu_name,
                "gpu_count": int(num_gpus) if num_gpus.is_integer() else num_gpus,
                "region": region,
                "country": country,
                "gpu_memory_gb": round(gpu_ram / MIB_PER_GIB, 2) if gpu_ram else None,
                "vcpus": _number(item.get("cpu_cores_effective")),
                "ram_gb": round(cpu_ram / MIB_PER_GIB, 2) if cpu_ram else None,
                "available": available,
                "extra": extra,
            }
            result.append(self.offer(kind="on_demand", price_per_hour=price, **{**common, "extra": {**extra, **bad_price}}))
            min_bid, bad_bid = read_price(item.get("min_bid"), at=field_path(at, "min_bid"))
            bad_bid = bad_count or bad_bid
            if min_bid or bad_bid:
                result.append(self.offer(kind="spot", price_per_hour=min_bid, **{**common, "extra": {**extra, **bad_bid}}))
        return result


def _describe(item: dict[str, Any]) -> str:
    """Which offer this is, for an error about an offer that lacks its id: GPUs, machine, host, place."""
    parts = [f"{item.get('num_gpus', '?')}x {item.get('gpu_name', '?')}"]
    parts += [f"{key} {item[key]}" for key in ("machine_id", "host_id", "geolocation") if item.get(key) not in (None, "")]
    return ", ".join(parts)
