"""Oracle Cloud (OCI) GPU prices from Oracle's public price list and Cost Estimator shapes.

Requests (no auth):

* ``GET https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD``: the
  price list, ``{"items": [...]}`` (ORDS-style ``hasMore`` + ``links[rel=next]`` paging is followed
  if Oracle ever pages it; today it is one page).
* ``GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json``: the Cost
  Estimator's shapes, ``{"items": [...]}``, each with ``name`` ("BM.GPU.H100.8"), ``gpuQty``,
  ``gpuMemoryQty`` (all GPUs together), ``bundleMemoryQty``, ``processorType.value``, ``hidden``,
  ``status`` and ``products[] {partNumber, qty, type.value}``.

``fetch`` returns ``{"products": [page, ...], "shapes": shapes_payload}``.

What is extracted: the GPU parts, i.e. price-list items whose ``metricName`` is "GPU Per Hour"
(e.g. B98415 "Oracle Cloud Infrastructure - Compute - GPU - H100"); the price is the first
``PAY_AS_YOU_GO`` entry of ``currencyCodeLocalizations[currencyCode=USD].prices[].value``, per
GPU-hour, and it includes the shape's CPU, memory and local NVMe (OCI sells GPU shapes by the GPU).

* Every active, visible shape that references a GPU part becomes one offer (``sku`` = shape name,
  ``gpu_count`` = ``gpuQty``, price = GPU part price x ``gpuQty`` plus any other priced parts of
  the shape x their ``qty``).
* A GPU part no shape references becomes one offer of ``gpu_count`` 1 (``sku`` = part number):
  the price list alone does not say how many GPUs a shape has.
* A listed price that is no number (text, an object) leaves the offers using that part unpriced,
  with ``extra[UNREADABLE_PRICE]`` naming the value and the part, so the validate stage quarantines
  them instead of pricing a shape without one of its parts.
* Parts that are not public cloud on-demand prices are skipped even though they are metered "GPU
  Per Hour": Compute Cloud@Customer parts (Oracle's racks in the customer's data centre, sold with
  an infrastructure subscription) and "Resource Commit" parts (a committed-use rate; the 2026 list
  prices a Cloud@Customer L40S at $0.60 beside the public $3.50).

``gpu_raw`` is the part's ``displayName`` exactly as Oracle writes it (names such as
"Compute - GPU - E3" or "Compute - GPU Standard - V2" name a shape generation, not a GPU model:
the catalog maps them). OCI prices are global: ``region`` is "" (the same price in every region).
No spot price is listed (preemptible capacity is a flat discount not in the price list), so only
``on_demand`` offers are emitted; ``extra["preemptible_allowed"]`` carries the shape's flag.
"""

from __future__ import annotations

from typing import Any

from scrapers.base import (
    FetchError,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    is_one_of,
    number,
    positive,
    read_price,
    require,
)
from tracker.catalog.instance_types import instance_gpu

PRODUCTS_URL = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/"
SHAPES_URL = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json"
GPU_METRIC = "gpu per hour"
#: Words in a part's displayName or serviceCategory that mark it as not a public on-demand price.
NOT_PUBLIC = ("cloud@customer", "resource commit")
MAX_PAGES = 20


class GpuPart:
    """A GPU part of the price list; ``bad`` is ``{UNREADABLE_PRICE: ...}`` when its listed price is
    no number (its offers are then quarantined with it)."""

    __slots__ = ("bad", "currency", "item", "number", "price")

    def __init__(self, number: str, item: dict[str, Any], price: float | None, currency: str, bad: dict[str, str]) -> None:
        self.number = number
        self.item = item
        self.price = price
        self.currency = currency
        self.bad = bad

    @property
    def sold(self) -> bool:
        """Priced, or listed with a price that must be quarantined (not a part without a price)."""
        return self.price is not None or bool(self.bad)


class OciScraper(Scraper):
    name = "oci"
    segment = "hyperscaler"
    display_name = "Oracle Cloud (OCI)"
    homepage = "https://www.oracle.com/cloud/compute/gpu/"
    endpoint = (
        "GET https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD "
        "and GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json"
    )
    source_kind = "api"
    fixture_kind = "recording"
    checked_by = "recording: the cetools products API, via ewyluda/gpu-price-index"
    kinds = ("on_demand",)
    caveats = (
        "list price, the same in every region; GPU parts no shape references are priced per single GPU; "
        "no spot/preemptible or commitment prices; Compute Cloud@Customer and Resource Commit parts are skipped (not public cloud prices)"
    )

    async def fetch(self, http: Http) -> dict[str, Any]:
        pages: list[Any] = []
        url = PRODUCTS_URL
        params: dict[str, str] | None = {"currencyCode": "USD"}
        for _ in range(MAX_PAGES):
            page = await http.get_json(url, params=params)
            pages.append(page)
            next_url = _next_link(page, self.name)
            if next_url is None:
                break
            url, params = http.same_origin(next_url, PRODUCTS_URL), None  # the next link carries the query
        else:
            raise FetchError(f"{self.name}: the price list did not end after {MAX_PAGES} pages")
        shapes = await http.get_json(SHAPES_URL)
        return {"products": pages, "shapes": shapes}

    # -- parse --------------------------------------------------------------------------------
    def parse(self, raw: Any) -> list[ScrapedOffer]:
        products = require(raw, "products", provider=self.name)
        pages = products if isinstance(products, list) else [products]
        items: list[Any] = []
        for page in pages:
            items.extend(require(page, "items", provider=self.name, kind=list))
        if not items:
            raise ParseError(f"{self.name}: the price list has no items")
        parts = self._gpu_parts(items)
        if not parts:
            raise ParseError(f"{self.name}: no 'GPU Per Hour' part among {len(items)} price-list items")
        prices, unreadable = self._all_prices(items)
        shapes = require(raw, "shapes", "items", provider=self.name, kind=list)

        offers: list[ScrapedOffer] = []
        used: set[str] = set()
        seen: set[str] = set()
        for shape in shapes:
            offer = self._shape_offer(shape, parts, prices, unreadable)
            if offer is None or offer.sku in seen:
                continue
            seen.add(offer.sku)
            used.add(offer.extra["part_number"])
            offers.append(offer)
        for part in parts.values():
            if part.number in used or not part.sold:
                continue
            offers.append(
                self.offer(
                    sku=part.number,
                    gpu_raw=require(part.item, "displayName", provider=self.name, kind=str),
                    gpu_count=1,
                    price_per_hour=part.price,
                    currency=part.currency,
                    extra={"part_number": part.number, "per": "GPU", "metric": part.item.get("metricName"), **part.bad},
                )
            )
        if not offers:
            raise ParseError(f"{self.name}: {len(parts)} GPU parts found but none has a PAY_AS_YOU_GO price")
        return offers

    def _gpu_parts(self, items: list[Any]) -> dict[str, GpuPart]:
        parts: dict[str, GpuPart] = {}
        for item in items:
            metric = require(item, "metricName", provider=self.name)
            if not isinstance(metric, str) or metric.strip().lower() != GPU_METRIC or not _is_public(item):
                continue
            part_no = require(item, "partNumber", provider=self.name, kind=str)
            parts[part_no] = GpuPart(part_no, item, *self._price(item, part_no))
        return parts

    def _all_prices(self, items: list[Any]) -> tuple[dict[str, float | None], dict[str, dict[str, str]]]:
        """Every part's price (``None``: not listed in a usable form) and, apart, the parts whose
        listed price is no number (a shape using one is quarantined, not priced without it)."""
        out: dict[str, float | None] = {}
        unreadable: dict[str, dict[str, str]] = {}
        for item in items:
            part_no = item.get("partNumber") if isinstance(item, dict) else None
            if isinstance(part_no, str):
                try:
                    out[part_no], _, bad = self._price(item, part_no)
                except ParseError:
                    out[part_no] = None
                else:
                    if bad:
                        unreadable[part_no] = bad
        return out, unreadable

    def _price(self, item: dict[str, Any], part_no: str) -> tuple[float | None, str, dict[str, str]]:
        """(price, currency, bad) of the first PAY_AS_YOU_GO price in USD (else the first currency
        listed); 0 or null -> not offered (None); a value that is no number -> (None, currency,
        ``{UNREADABLE_PRICE: ...}``) naming the part."""
        locs = require(item, "currencyCodeLocalizations", provider=self.name, kind=list)
        if not locs:
            raise ParseError(f"{self.name}: part {part_no} has no currencyCodeLocalizations")
        loc = next((x for x in locs if isinstance(x, dict) and x.get("currencyCode") == "USD"), locs[0])
        currency = require(loc, "currencyCode", provider=self.name, kind=str)
        for entry in require(loc, "prices", provider=self.name, kind=list):
            if isinstance(entry, dict) and entry.get("model") == "PAY_AS_YOU_GO":
                value, bad = read_price(entry.get("value"), at=f"prices.value of part {part_no}")
                if bad:
                    return None, currency, bad
                return (value or None), currency, {}
        return None, currency, {}

    def _shape_offer(
        self, shape: Any, parts: dict[str, GpuPart], prices: dict[str, float | None], unreadable: dict[str, dict[str, str]]
    ) -> ScrapedOffer | None:
        name = require(shape, "name", provider=self.name, kind=str)
        if shape.get("hidden") or shape.get("status", "ACTIVE") != "ACTIVE":
            return None
        products = require(shape, "products", provider=self.name, kind=list)
        gpu_products = [p for p in products if isinstance(p, dict) and is_one_of(p.get("partNumber"), parts)]
        if not gpu_products:
            return None
        gpu_product = gpu_products[0]
        part = parts[gpu_product["partNumber"]]
        count = positive(shape.get("gpuQty"))
        if count is None:
            count = positive(gpu_product.get("qty")) if _ptype(gpu_product) == "gpu" else None
        if count is None or not part.sold:
            return None  # the part is then offered on its own, per GPU
        price = part.price * count if part.price is not None else None
        bad = dict(part.bad)
        unpriced: list[str] = []
        ocpus: float | None = None
        for product in products:
            if product is gpu_product or not isinstance(product, dict):
                continue
            part_no = product.get("partNumber")
            qty = number(product.get("qty"))
            if _ptype(product) == "ocpu" and qty is not None:
                ocpus = qty
            if is_one_of(part_no, parts):
                continue
            if isinstance(part_no, str) and part_no in unreadable:
                bad = bad or unreadable[part_no]
                continue
            unit = prices.get(part_no) if isinstance(part_no, str) else None
            if unit is None or qty is None:
                unpriced.append(str(part_no))
                continue
            price = None if price is None else price + unit * qty
        if _ptype(gpu_product) == "ocpu" and (own := number(gpu_product.get("qty"))) is not None:
            ocpus = own
        processor = (shape.get("processorType") or {}).get("value") if isinstance(shape.get("processorType"), dict) else None
        vcpus = ocpus * 2 if ocpus is not None and processor in ("intel", "amd") else None
        memory_total = positive(shape.get("gpuMemoryQty"))
        memory_gb = memory_total / count if memory_total is not None else None
        ram = shape.get("bundleMemoryQty")
        hint = instance_gpu(name, self.name)
        extra: dict[str, Any] = {
            "part_number": part.number,
            "preemptible_allowed": bool(shape.get("allowPreemptible")),
        }
        if ocpus is not None:
            extra["ocpus"] = ocpus
        if unpriced:
            extra["unpriced_parts"] = unpriced
        if bad:
            extra.update(bad)
            price = None  # quarantined with the unreadable value, not priced without it
        return self.offer(
            sku=name,
            gpu_raw=require(part.item, "displayName", provider=self.name, kind=str),
            gpu_count=count,
            gpu_memory_gb=memory_gb,
            vcpus=vcpus,
            ram_gb=positive(ram),
            price_per_hour=None if price is None else round(price, 6),
            currency=part.currency,
            gpu=hint[0] if hint else None,
            extra=extra,
        )


def _is_public(item: dict[str, Any]) -> bool:
    """False for Compute Cloud@Customer and committed-use parts (see the module docstring)."""
    words = f"{item.get('displayName') or ''} {item.get('serviceCategory') or ''}".lower()
    return not any(marker in words for marker in NOT_PUBLIC)


def _ptype(product: dict[str, Any]) -> str | None:
    t = product.get("type")
    return t.get("value") if isinstance(t, dict) else None


def _next_link(page: Any, provider: str) -> str | None:
    """ORDS paging: ``hasMore`` true and a ``links`` entry with ``rel`` "next"."""
    if not isinstance(page, dict) or not page.get("hasMore"):
        return None
    for link in page.get("links") or []:
        if isinstance(link, dict) and link.get("rel") == "next" and isinstance(link.get("href"), str):
            return link["href"]
    raise FetchError(f"{provider}: the price list says hasMore but gives no next link")
