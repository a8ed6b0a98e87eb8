"""Parse AWS's bulk EC2 offer files (the Price List API), streamed: they are hundreds of MB each.

``https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/<region>/index.json``
is downloaded to a temporary file (``OfferFiles`` owns the downloads and remembers which region
and URL each came from, so errors name those and never the temporary file). ``parse_offer_files``
streams each file with ijson and deletes the downloads once read (also on error, and when the
list is garbage-collected unparsed). Nothing ever loads a whole offer file.

Two streaming passes per file, because the two sections are far apart:

1. ``products``: keep only GPU instance SKUs in a small dict. A product is kept when
   ``productFamily`` is "Compute Instance" (or its bare-metal variant) and its ``attributes`` say
   ``operatingSystem`` Linux, ``tenancy`` Shared, ``preInstalledSw`` NA, ``capacitystatus`` Used,
   ``marketoption`` OnDemand (Capacity Blocks are excluded), ``licenseModel`` "No License required"
   and ``locationType`` "AWS Region" (Local Zones carry their parent's ``regionCode`` and are left
   out), and the ``instanceType`` is in the catalog's instance-type table for aws or its ``gpu``
   attribute is a positive count. Trainium/Inferentia and other non-GPU accelerators are skipped
   even though their ``gpu`` attribute counts chips (see ``scrapers._aws_common``).
2. ``terms.OnDemand[<sku>][<sku>.<offerTermCode>].priceDimensions[*].pricePerUnit.USD`` with
   ``unit`` "Hrs": the hourly price of the whole instance. One SKU's price missing, empty, no
   number or negative quarantines that offer with the field's path named; the others are kept
   (every offer so: a ``ParseError`` naming the field).

Extracted: ``instanceType`` (our ``sku`` and ``gpu_raw``; the payload names no GPU model),
``regionCode``, ``vcpu``, ``memory`` ("1152 GiB"), the AWS product SKU code (``extra``). GPU model
and count come from the instance-type table; an instance type missing from it keeps ``gpu=None``
and takes its count from the ``gpu`` attribute.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO, Final

import ijson

from scrapers._aws_common import country_of, gpu_of, is_not_gpu
from scrapers.base import (
    UNREADABLE_PRICE,
    ParseError,
    ScrapedOffer,
    positive,
    read_price,
)

OFFER_URL: Final = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.json"
_MEMORY = re.compile(r"^\s*([\d.,]+)\s*(GiB|GB)\s*$", re.IGNORECASE)
#: How far into a file the header (offerCode, version ...) may go before ``products`` starts.
_HEADER_EVENTS = 200

PRODUCT_FAMILIES: Final = frozenset({"Compute Instance", "Compute Instance (bare metal)"})
#: attribute -> accepted values (``None`` in the set: the attribute may be absent).
ATTRIBUTE_FILTER: Final[Mapping[str, frozenset[str | None]]] = {
    "operatingSystem": frozenset({"Linux"}),
    "tenancy": frozenset({"Shared"}),
    "preInstalledSw": frozenset({"NA"}),
    "capacitystatus": frozenset({"Used"}),
    "marketoption": frozenset({"OnDemand", None}),
    "licenseModel": frozenset({"No License required", None}),
    "locationType": frozenset({"AWS Region", None}),
}


def _unlink_all(paths: Iterable[Path]) -> None:
    for p in paths:
        try:
            p.unlink(missing_ok=True)
        except OSError:  # pragma: no cover - best effort cleanup
            pass


class OfferFiles(list[Path]):
    """Downloaded offer files that parse owns and deletes (or the GC does, if never parsed).

    ``origin`` remembers the region and URL of each download, for error messages.
    """

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        super().__init__(paths)
        self.origin: dict[Path, tuple[str, str]] = {}
        # The finalizer must not hold ``self``: it keeps its own list of every path ever added.
        self._registry: list[Path] = list(self)
        weakref.finalize(self, _unlink_all, self._registry)

    def append(self, path: Path) -> None:
        super().append(path)
        self._registry.append(path)

    def add(self, path: Path, region: str, url: str) -> None:
        """A download of ``url``, the offer file of ``region``."""
        self.append(path)
        self.origin[path] = (region, url)

    def extend(self, paths: Iterable[Path]) -> None:
        paths = list(paths)
        super().extend(paths)
        self._registry.extend(paths)

    def cleanup(self) -> None:
        _unlink_all([*self._registry, *self])


def _count(value: Any) -> float | None:
    """An attribute such as ``"8"`` or ``"1,024"`` as a positive number, else ``None``."""
    return positive(str(value), strings=True)


def _memory_gb(value: Any) -> float | None:
    m = _MEMORY.match(str(value)) if value is not None else None
    return float(m.group(1).replace(",", "")) if m else None


def parse_offer_files(raw: Any, provider: str = "aws") -> list[ScrapedOffer]:
    """Offers from one offer file path, a list of paths, or ``OfferFiles`` (deleted once read)."""
    owned = isinstance(raw, OfferFiles)
    paths = _paths(raw, provider)
    origin = raw.origin if isinstance(raw, OfferFiles) else {}
    try:
        offers: dict[tuple[str, str, str], ScrapedOffer] = {}
        for path in paths:
            where = _describe(path, origin, provider)
            for offer in _parse_file(path, where, provider):
                key = (offer.sku, offer.region, offer.kind)
                if key in offers:
                    raise ParseError(f"{provider}: {offer.sku} in {offer.region} appears in two offer files")
                offers[key] = offer
            if owned:
                path.unlink(missing_ok=True)  # free the disk as soon as a region is read
        if not offers:
            raise ParseError(f"{provider}: no Linux on-demand GPU instance prices in {len(paths)} offer file(s)")
        return list(offers.values())
    finally:
        if owned:
            raw.cleanup()


def _describe(path: Path, origin: Mapping[Path, tuple[str, str]], provider: str) -> str:
    """``aws: offer file for us-east-1 (<url>)`` for a download, the payload's file name for a local path."""
    if path in origin:
        region, url = origin[path]
        return f"{provider}: offer file for {region} ({url})"
    return f"{provider}: offer file {path.name!r} named by the payload"


def _paths(raw: Any, provider: str) -> list[Path]:
    if isinstance(raw, (str, Path)):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(p, (str, Path)) for p in raw):
        raise ParseError(f"{provider}: payload should be an offer file path or a non-empty list of paths, got {type(raw).__name__}")
    return [Path(p) for p in raw]


def _parse_file(path: Path, where: str, provider: str) -> list[ScrapedOffer]:
    try:
        with path.open("rb") as fh:
            _check_header(fh, where)
            fh.seek(0)
            gpu_products = _gpu_products(fh, where)
            if not gpu_products:
                return []
            fh.seek(0)
            prices = _on_demand_prices(fh, gpu_products, where)
    except OSError as exc:
        raise ParseError(f"{where} cannot be read: {exc.strerror or exc}") from None
    except ijson.JSONError as exc:
        detail = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        raise ParseError(f"{where} is not valid JSON ({detail})") from None
    if not prices:
        raise ParseError(f"{where}: terms.OnDemand has no entry for any of the {len(gpu_products)} GPU products")
    by_type: dict[str, ScrapedOffer] = {}
    for sku, product in gpu_products.items():
        price = prices.get(sku)
        if not _priced(price):
            continue
        offer = _offer(sku, product, price, provider)
        old = by_type.get(offer.sku)
        if old is not None:
            # Two products for one instance type passed the filters: keep the cheaper, say so.
            keep, other = (offer, old) if _cheaper(offer, old) else (old, offer)
            extra = {**keep.extra, "other_aws_skus": [*keep.extra.get("other_aws_skus", []), other.extra["aws_sku"]]}
            if other.price_per_hour is not None and not other.extra.get(UNREADABLE_PRICE):
                extra["other_prices"] = sorted({*keep.extra.get("other_prices", []), other.price_per_hour})
            offer = replace(keep, extra=extra)
        by_type[offer.sku] = offer
    return list(by_type.values())


def _cheaper(a: ScrapedOffer, b: ScrapedOffer) -> bool:
    """Whether ``a`` is kept over ``b``: the lower price (a readable price over an unreadable one)."""
    if bool(a.extra.get(UNREADABLE_PRICE)) != bool(b.extra.get(UNREADABLE_PRICE)):
        return not a.extra.get(UNREADABLE_PRICE)
    if a.price_per_hour is None or b.price_per_hour is None:
        return b.price_per_hour is None and a.price_per_hour is not None
    return a.price_per_hour < b.price_per_hour


def _priced(price: Price | None) -> bool:
    # A product with an OnDemand term priced at 0 is "not sold here"; no term at all is kept
    # as listed-without-price so it is not dropped silently, an unreadable price for quarantine.
    return price is None or price[0] is None or price[0] > 0 or bool(price[2])


def _check_header(fh: BinaryIO, where: str) -> None:
    """The scalars before ``products`` must describe an EC2 offer file, and ``products`` must follow."""
    for n, (prefix, event, value) in enumerate(ijson.parse(fh)):
        if prefix == "offerCode" and event == "string" and value != "AmazonEC2":
            raise ParseError(f"{where} is an offer file for {value!r}, not AmazonEC2")
        if prefix == "" and event == "map_key" and value in ("products", "terms"):
            return
        if (prefix == "" and event == "end_map") or n > _HEADER_EVENTS:
            break
        if n == 0 and event != "start_map":
            break
    raise ParseError(f"{where} has no 'products' section")


def _gpu_products(fh: BinaryIO, where: str) -> dict[str, dict[str, Any]]:
    """Pass 1: the GPU instance products of the file, by SKU code (a few hundred at most)."""
    kept: dict[str, dict[str, Any]] = {}
    gpus: dict[str, tuple[str | None, float] | None] = {}
    region_codes: set[str] = set()
    for sku, product in ijson.kvitems(fh, "products"):
        if not isinstance(product, dict):
            raise ParseError(f"{where}: products.{sku} should be an object, got {type(product).__name__}")
        if product.get("productFamily") not in PRODUCT_FAMILIES:
            continue
        attrs = product.get("attributes")
        if not isinstance(attrs, dict):
            raise ParseError(f"{where}: products.{sku}.attributes is missing")
        if any(attrs.get(key) not in allowed for key, allowed in ATTRIBUTE_FILTER.items()):
            continue
        itype = attrs.get("instanceType")
        if not isinstance(itype, str) or not itype:
            raise ParseError(f"{where}: products.{sku}.attributes.instanceType is missing")
        if itype not in gpus:
            known = gpu_of(itype)
            count = None if is_not_gpu(itype) else _count(attrs.get("gpu"))
            gpus[itype] = (known[0], known[1]) if known else ((None, count) if count else None)
        gpu = gpus[itype]
        if gpu is None:
            continue
        region = attrs.get("regionCode")
        if not isinstance(region, str) or not region:
            raise ParseError(f"{where}: products.{sku}.attributes.regionCode is missing")
        region_codes.add(region)
        kept[str(sku)] = {
            "instanceType": itype,
            "regionCode": region,
            "gpu": gpu[0],
            "gpu_count": gpu[1],
            "vcpu": _count(attrs.get("vcpu")),
            "memory": _memory_gb(attrs.get("memory")),
            "storage": attrs.get("storage"),
            "networkPerformance": attrs.get("networkPerformance"),
        }
    if len(region_codes) > 1:
        raise ParseError(f"{where} mixes regions {sorted(region_codes)}")
    return kept


#: (hourly USD price, other prices, extra): ``extra`` is ``{UNREADABLE_PRICE: reason}`` when a price
#: of the SKU cannot be read (the offer is then quarantined with the field named).
Price = tuple[float | None, list[float], dict[str, str]]


def _on_demand_prices(fh: BinaryIO, products: Mapping[str, Any], where: str) -> dict[str, Price]:
    """Pass 2: (hourly USD price, other prices, extra) for the kept SKUs from ``terms.OnDemand``.

    A term or price dimension gone or retyped is a ``ParseError`` (the file changed); one SKU's
    ``pricePerUnit.USD`` missing, empty, no number or negative leaves that SKU's offer to be
    quarantined with the field's path named, the others are kept."""
    prices: dict[str, Price] = {}
    for sku, terms in ijson.kvitems(fh, "terms.OnDemand"):
        if sku not in products:
            continue
        if not isinstance(terms, dict):
            raise ParseError(f"{where}: terms.OnDemand.{sku} should be an object")
        found: list[float] = []
        bad: tuple[float | None, dict[str, str]] | None = None
        for term_code, term in terms.items():
            dims = term.get("priceDimensions") if isinstance(term, dict) else None
            if not isinstance(dims, dict):
                raise ParseError(f"{where}: terms.OnDemand.{sku} has no priceDimensions")
            for rate_code, dim in dims.items():
                per_unit = dim.get("pricePerUnit") if isinstance(dim, dict) else None
                if not isinstance(per_unit, dict):  # empty: the price is missing (read_price says so)
                    raise ParseError(f"{where}: terms.OnDemand.{sku} priceDimension has no pricePerUnit")
                if dim.get("unit") not in ("Hrs", "Hours", "Hour", "hrs"):
                    continue
                if isinstance(per_unit.get("USD"), Decimal):  # ijson reads JSON numbers as Decimal
                    per_unit = {**per_unit, "USD": str(per_unit["USD"])}
                at = f"terms.OnDemand[{sku!r}][{term_code!r}].priceDimensions[{rate_code!r}].pricePerUnit"
                price, reason = read_price(per_unit, "USD", at=at, required=True)
                if reason:
                    bad = bad or (price, reason)
                elif price is not None:
                    found.append(price)
        if bad is not None:
            prices[sku] = (bad[0], [], bad[1])
        elif not found:
            prices[sku] = (None, [], {})
        else:
            best = min(found)
            prices[sku] = (best, sorted({p for p in found if p != best}), {})
    return prices


def _offer(sku: str, product: Mapping[str, Any], price: Price | None, provider: str) -> ScrapedOffer:
    extra: dict[str, Any] = {"aws_sku": sku, "source": "offer-file", **(price[2] if price else {})}
    for key, name in (("storage", "storage"), ("networkPerformance", "network")):
        if product.get(key):
            extra[name] = product[key]
    if price is None:
        extra["no_on_demand_term"] = True
    elif price[1]:
        extra["other_prices"] = price[1]
    region = product["regionCode"]
    return ScrapedOffer(
        provider=provider,
        sku=product["instanceType"],
        region=region,
        country=country_of(region),
        gpu_raw=product["instanceType"],
        gpu=product["gpu"],
        gpu_count=product["gpu_count"],
        vcpus=product["vcpu"],
        ram_gb=product["memory"],
        price_per_hour=price[0] if price else None,
        currency="USD",
        kind="on_demand",
        extra=extra,
    )
