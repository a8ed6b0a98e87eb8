"""Vast.ai marketplace offers from the public bundles search.

Request: ``POST https://console.vast.ai/api/v0/bundles/`` with the JSON query the ``vastai search
offers --raw verified=any`` CLI sends: ``rentable == true``, ``rented == false``, ``external ==
false``, no ``verified`` filter (verified, unverified and deverified hosts alike), ``type``
``"on-demand"``, ``allocated_storage`` 5 GB, ordered by score, ``limit`` ``MAX_OFFERS``. The
search answers in one body (no pagination). Auth: none needed; when ``$VAST_API_KEY`` is set it
is sent as ``Authorization: Bearer <key>``.

Clamped searches. The search does not always honour ``limit``: a 2026 keyless client saw every
anonymous search answered with at most 64 offers (the search's default size, ``KNOWN_CAPS``;
gpuhunt notes the same 64 when no limit is given), and a whole market of a few thousand offers
cannot be told from its first 64 by one answer. So an answer whose size is a known cap, or reaches
the limit asked, is taken as **clamped** (``clamped``), and the market is then collected in parts,
the way 2026 clients ask per chip (getcomputable/gpu-index's observatory asks one search per GPU
name): one search per GPU name seen (``gpu_name eq <name>``), then one for every other GPU
(``gpu_name notin [<names asked>]``, an operator of the vast-cli query language) whose new names,
if that search is clamped too, get searches of their own, for at most ``MAX_ROUNDS`` rounds. A part
that is still clamped (64 offers of one GPU name) cannot be split further here, and one that
fails (a 429 after the retries, say) is kept as ``{"search": ..., "error": ...}``: ``parse`` then
returns ``PartialOffers`` naming those searches, so the offers not seen stay unknown rather than
delisted. Each search and its offer count are in the payload, and every offer says which search
found it and how many that search answered (``extra["search"]``, ``extra["search_count"]``).

``fetch`` returns ``{"searches": [{"search": "all" | "gpu_name=<name>" | "other GPUs", "limit": n,
"count": n, "response": <decoded body {"offers": [...]}>}, ...]}``; ``parse`` also takes one bare
body ``{"offers": [...]}`` and the bare list the CLI prints (what the 2024 and 2025 recordings are),
judged clamped when their size is a known cap.

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
last comma the country), ``rentable``/``rented`` (available; the search asks for rentable, unrented offers, so a listing that
states neither is available, its ``num_gpus`` free: ``available_count``), ``verification`` ("verified",
"unverified", "deverified"; ``extra["verified"]`` is true only for "verified"),
``hosting_type`` (1 = datacenter), ``reliability2``, ``machine_id``, ``host_id``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from scrapers.base import (
    FetchError,
    Http,
    ParseError,
    PartialOffers,
    ScrapedOffer,
    Scraper,
    field_path,
    free_count,
    number,
    read_count,
    read_price,
    require,
)

BUNDLES_URL = "https://console.vast.ai/api/v0/bundles/"
#: The CLI's own "everything" limit; the whole market is a few thousand offers.
MAX_OFFERS = 65535
#: Answer sizes that mean "cut short", whatever limit was asked: the search's default size (64).
KNOWN_CAPS: Final = frozenset({64})
#: Rounds of "every other GPU" searches after the per-name ones (each round asks the names it finds).
MAX_ROUNDS: Final = 3
ALL, OTHERS = "all", "other GPUs"
MIB_PER_GIB = 1024

_COUNTRY = re.compile(r"^[A-Z]{2}$")


def search_query(gpu_name: dict[str, Any] | None = None) -> dict[str, Any]:
    """The bundles search body: every rentable, unrented on-demand offer, any verification,
    narrowed to ``gpu_name`` (``{"eq": name}`` or ``{"notin": [names]}``) when given."""
    query: dict[str, Any] = {
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "external": {"eq": False},
        "type": "on-demand",
        "order": [["score", "desc"]],
        "allocated_storage": 5.0,
        "limit": MAX_OFFERS,
    }
    if gpu_name is not None:
        query["gpu_name"] = gpu_name
    return query


def clamped(count: int, limit: int | None) -> bool:
    """Whether an answer of ``count`` offers to a search asking ``limit`` was cut short: its size is
    a known cap, or it reached the limit (``None``: limit unknown, only the caps tell)."""
    return count in KNOWN_CAPS or (limit is not None and count >= limit)


def _listing(body: Any) -> list[Any] | None:
    """The offers of one answer (``{"offers": [...]}`` or the CLI's bare list), None if neither."""
    if isinstance(body, dict) and isinstance(body.get("offers"), list):
        return body["offers"]
    return body if isinstance(body, list) else None


def _names(listing: list[Any] | None) -> list[str]:
    return sorted({o["gpu_name"] for o in listing or [] if isinstance(o, dict) and isinstance(o.get("gpu_name"), str)})


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
    segment = "marketplace"
    display_name = "Vast.ai"
    homepage = "https://vast.ai/pricing"
    endpoint = "POST https://console.vast.ai/api/v0/bundles/"
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = "reference: the 2026 per-chip search answers of getcomputable/gpu-index's observatory (structure only, own values)"
    optional_credentials = ("VAST_API_KEY",)
    kinds = ("on_demand", "spot")
    caveats = (
        "marketplace: one offer per host slice, prices set by hosts; price excludes storage "
        "(kept in extra); spot is the interruptible bid floor"
    )

    async def fetch(self, http: Http) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        key = self.credential("VAST_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        searches: list[dict[str, Any]] = []

        async def search(label: str, gpu_name: dict[str, Any] | None = None) -> list[Any] | None:
            try:
                body = await http.post_json(BUNDLES_URL, json=search_query(gpu_name), headers=headers)
            except FetchError as exc:
                if gpu_name is None:
                    raise  # the first search is the run
                searches.append({"search": label, "limit": MAX_OFFERS, "error": str(exc)})  # that part stays unknown
                return None
            listing = _listing(body)
            searches.append({"search": label, "limit": MAX_OFFERS, "count": None if listing is None else len(listing), "response": body})
            return listing

        listing = await search(ALL)
        if listing is None or not clamped(len(listing), MAX_OFFERS):
            return {"searches": searches}
        asked: list[str] = []
        pending = _names(listing)
        for _ in range(MAX_ROUNDS):
            for name in pending:
                await search(f"gpu_name={name}", {"eq": name})
                asked.append(name)
            others = await search(OTHERS, {"notin": sorted(asked)})
            if others is None or not clamped(len(others), MAX_OFFERS):
                break
            pending = [n for n in _names(others) if n not in asked]
            if not pending:
                break
        return {"searches": searches}

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        wrapped = isinstance(raw, dict) and "searches" in raw
        if wrapped:
            searches = require(raw, "searches", provider=self.name, kind=list)
        elif isinstance(raw, (dict, list)):
            searches = [{"search": ALL, "limit": None, "response": raw}]  # one recorded answer
        else:
            raise ParseError(f"{self.name}: payload should be {{'offers': [...]}} or a list, got {type(raw).__name__}")
        if not searches:
            raise ParseError(f"{self.name}: payload has no search")
        labels = [require(e, "search", provider=self.name, kind=str, at=field_path("searches", i)) for i, e in enumerate(searches)]
        # only the searches nothing later narrows down decide: every per-name one, and the last broad one
        broad = [i for i, label in enumerate(labels) if not label.startswith("gpu_name=")]
        deciding = {i for i, label in enumerate(labels) if label.startswith("gpu_name=")} | set(broad[-1:])
        result: list[ScrapedOffer] = []
        seen: set[str] = set()
        cut: list[str] = []
        # the deciding searches first, so an offer found by several is credited to the one that decides
        for at_search in sorted(range(len(searches)), key=lambda i: i not in deciding):
            entry = searches[at_search]
            where = field_path("searches", at_search) if wrapped else ""
            label = labels[at_search]
            if isinstance(entry, dict) and "error" in entry and "response" not in entry:
                cut.append(f"{label} (failed: {entry['error']})")
                continue
            body = require(entry, "response", provider=self.name, at=where)
            if isinstance(body, dict):
                offers = require(body, "offers", provider=self.name, kind=list, at=field_path(where, "response"))
            elif isinstance(body, list):
                offers = body
            else:
                raise ParseError(f"{self.name}: {field_path(where, 'response') or 'payload'} should be {{'offers': [...]}} or a list, got {type(body).__name__}")
            limit = entry.get("limit")
            limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
            # only the searches nothing later narrows down decide: every per-name one, and the last broad one
            if at_search in deciding and clamped(len(offers), limit):
                cut.append(f"{label} ({len(offers)} offers)")
            at_offers = field_path(where, "response", "offers") if where else "offers"
            result += self._offers(offers, seen, at_offers, {"search": label, "search_count": len(offers)} if wrapped else {})
        if not result:
            raise ParseError(f"{self.name}: the search returned no offers")
        if cut:
            return PartialOffers(result, reason=(
                f"{self.name}: {len(cut)} search(es) answered a known cap or their limit, or failed, so more offers may exist: "
                + ", ".join(cut[:5]) + (" ..." if len(cut) > 5 else "")
            ))
        return result

    def _offers(self, offers: list[Any], seen: set[str], at_offers: str, searched: dict[str, Any]) -> list[ScrapedOffer]:
        """The offers of one answer (``at_offers`` is where its list sits), skipping ids in ``seen``."""
        result: list[ScrapedOffer] = []
        for index, item in enumerate(offers):
            if not isinstance(item, dict):
                raise ParseError(f"{self.name}: {field_path(at_offers, index)} should be an object, got {type(item).__name__}")
            offer_id = item.get("id")
            if isinstance(offer_id, bool) or not isinstance(offer_id, (int, str)) or not str(offer_id).strip():
                raise ParseError(f"{self.name}: {field_path(at_offers, index)} ({_describe(item)}) has no usable 'id', got {offer_id!r}")
            sku = str(offer_id)
            if sku in seen:  # the same ask listed twice is one offer
                continue
            seen.add(sku)
            where = f"{field_path(at_offers, index)} (id {sku})"
            gpu_name = item.get("gpu_name")
            if not isinstance(gpu_name, str):
                raise ParseError(f"{self.name}: {where} has no gpu_name string")
            at = field_path(at_offers, index)
            num_gpus, bad_count = read_count(item, "num_gpus", at=at)
            price, bad_price = read_price(item, "dph_base", at=at)
            bad_price = bad_count or bad_price
            gpu_ram = _number(item.get("gpu_ram"))
            cpu_ram = _number(item.get("cpu_ram"))
            region, country = split_geolocation(item.get("geolocation"))
            rentable, rented = item.get("rentable"), item.get("rented")
            # the search asks for rentable, unrented offers only: a listing that does not say is one
            available = True if rentable is None and rented is None else bool(rentable) and not rented
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
                **searched,
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
                "available_count": None if bad_count else (free_count(num_gpus) or None) if available else 0,
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
