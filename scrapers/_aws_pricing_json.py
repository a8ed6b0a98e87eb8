"""Parse AWS's light EC2 pricing JSON: one small document per location, Linux on-demand.

The document (the one AWS's own on-demand pricing page loads)::

    {"manifest": {"currencyCode": "USD", "source": "ec2-ondemand-without-sec-sel", ...},
     "regions": {"US East (N. Virginia)": {
         "p5 48xlarge US East N. Virginia Linux": {
             "rateCode": "3D4V8UAYEMB38GU2.JRTCKXETXF.6YS6EN2CT7", "price": "55.0400000000",
             "Location": "US East (N. Virginia)", "Instance Type": "p5.48xlarge", "vCPU": "192",
             "Memory": "2048 GiB", "Instance Family": "GPU instance", "Operating System": "Linux",
             "Pre Installed S/W": "NA", "License Model": "No License required", ...}}}}

``price`` is USD per instance-hour. The rate code is ``<SKU>.<OnDemand term>.<price dimension>``,
the same SKU as in the bulk offer file. There is no GPU model, GPU count or region code: the
location maps to a region through ``REGIONS``, the instance type to a GPU through the catalog's
instance-type table. A row whose instance type is not in that table is left out; when its
``Instance Family`` says "GPU instance" it is a GPU the table lacks, and parse logs its name so
the table can be extended (the document gives no GPU count to price it per GPU).

``parse_documents`` takes ``{location: document}`` (what the scraper's fetch returns, and the
shape of the bundled 2026 recording). Every malformed field raises ``ParseError`` naming the
provider, the region, the URL of the document and the field, except one row's ``price``: missing,
no number or negative, that row is quarantined with the field named and the others are kept.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final
from urllib.parse import quote

from scrapers._aws_common import REGION_BY_LOCATION, Region, gpu_of, is_not_gpu
from scrapers.base import (
    UNREADABLE_PRICE,
    ParseError,
    ScrapedOffer,
    is_one_of,
    read_price,
)

log = logging.getLogger("scrapers.aws")

PRICING_URL: Final = (
    "https://b0.p.awsstatic.com/pricing/2.0/meteredUnitMaps/ec2/USD/current/ec2-ondemand-without-sec-sel/"
    "{location}/Linux/index.json"
)
SOURCE: Final = "ec2-ondemand-without-sec-sel"
#: Row attribute -> accepted values (``None``: the attribute may be absent).
ROW_FILTER: Final[Mapping[str, frozenset[str | None]]] = {
    "Operating System": frozenset({"Linux", None}),
    "Pre Installed S/W": frozenset({"NA", None}),
    "License Model": frozenset({"No License required", None}),
}
GPU_FAMILY: Final = "GPU instance"
_MEMORY: Final = re.compile(r"^\s*([\d.,]+)\s*(GiB|GB)\s*$", re.IGNORECASE)
_RATE_CODE: Final = re.compile(r"^([A-Z0-9]+)\.([A-Z0-9]+)\.([A-Z0-9]+)$")


def pricing_url(location: str) -> str:
    """The document's URL: the location URL-quoted as AWS's page does (``US%20East%20(N.%20Virginia)``)."""
    return PRICING_URL.format(location=quote(location, safe="()"))


def parse_documents(documents: Any, provider: str = "aws") -> list[ScrapedOffer]:
    if not isinstance(documents, Mapping) or not documents:
        raise ParseError(f"{provider}: payload should be pricing JSON documents by location, got {type(documents).__name__}")
    offers: list[ScrapedOffer] = []
    unknown_gpu_types: set[str] = set()
    for location, document in documents.items():
        region = REGION_BY_LOCATION.get(location) if isinstance(location, str) else None
        if region is None:
            raise ParseError(f"{provider}: pricing JSON for an unknown location {location!r} (not in the region table)")
        offers += _parse_document(document, region, provider, unknown_gpu_types)
    if unknown_gpu_types:
        log.warning(
            "%s: GPU instance types missing from the instance-type table, left out: %s",
            provider, ", ".join(sorted(unknown_gpu_types)),
        )
    if not offers:
        raise ParseError(f"{provider}: no Linux on-demand GPU instance prices in {len(documents)} pricing JSON document(s)")
    return offers


def _parse_document(document: Any, region: Region, provider: str, unknown_gpu_types: set[str]) -> list[ScrapedOffer]:
    where = f"{provider}: pricing JSON for {region.code} ({region.location}, {pricing_url(region.location)})"
    if not isinstance(document, Mapping):
        raise ParseError(f"{where} should be an object, got {type(document).__name__}")
    manifest = document.get("manifest")
    if manifest is not None:
        if not isinstance(manifest, Mapping):
            raise ParseError(f"{where}: manifest should be an object")
        if manifest.get("currencyCode", "USD") != "USD":
            raise ParseError(f"{where}: manifest.currencyCode is {manifest.get('currencyCode')!r}, not 'USD'")
        if manifest.get("source", SOURCE) != SOURCE:
            raise ParseError(f"{where}: manifest.source is {manifest.get('source')!r}, not {SOURCE!r}")
    regions = document.get("regions")
    if not isinstance(regions, Mapping):
        raise ParseError(f"{where} has no 'regions' object")
    others = sorted(k for k in regions if k != region.location)
    if others:
        raise ParseError(f"{where}: regions has {others} besides {region.location!r}")
    rows = regions.get(region.location)
    if not isinstance(rows, Mapping):
        raise ParseError(f"{where}: regions.{region.location!r} should be an object of rows")

    by_type: dict[str, ScrapedOffer] = {}
    for key, row in rows.items():
        field = f"{where}: regions.{region.location!r}.{key!r}"
        if not isinstance(row, Mapping):
            raise ParseError(f"{field} should be an object, got {type(row).__name__}")
        itype = row.get("Instance Type")
        if not isinstance(itype, str) or not itype.strip():
            raise ParseError(f"{field}['Instance Type'] is missing")
        if not all(is_one_of(row.get(attr), allowed) for attr, allowed in ROW_FILTER.items()):
            continue
        if row.get("Location", region.location) != region.location:
            raise ParseError(f"{field}['Location'] is {row.get('Location')!r}, not {region.location!r}")
        gpu = gpu_of(itype)
        if gpu is None:
            if row.get("Instance Family") == GPU_FAMILY and not is_not_gpu(itype):
                unknown_gpu_types.add(itype)
            continue
        offer = _offer(row, itype, gpu, region, field, provider, at=f"regions[{region.location!r}][{key!r}]")
        old = by_type.get(offer.sku)
        if old is not None:
            offer = _keep_cheaper(offer, old)
        by_type[offer.sku] = offer
    return list(by_type.values())


def _offer(
    row: Mapping[str, Any], itype: str, gpu: tuple[str, float], region: Region, field: str, provider: str, at: str
) -> ScrapedOffer:
    # missing, no number or negative: this row is quarantined with the field named, not the document
    price, bad = read_price(row, "price", at=at)
    extra: dict[str, Any] = {"source": SOURCE, **bad}
    rate_code = row.get("rateCode")
    if rate_code is not None:
        m = _RATE_CODE.match(rate_code) if isinstance(rate_code, str) else None
        if not m:
            raise ParseError(f"{field}['rateCode'] is not <SKU>.<term>.<dimension>: {rate_code!r}")
        extra.update(aws_sku=m.group(1), rate_code=rate_code)
    for attr, name in (("Storage", "storage"), ("Network Performance", "network")):
        if isinstance(row.get(attr), str) and row[attr]:
            extra[name] = row[attr]
    return ScrapedOffer(
        provider=provider,
        sku=itype,
        region=region.code,
        country=region.country,
        gpu_raw=itype,
        gpu=gpu[0],
        gpu_count=gpu[1],
        vcpus=_number(row.get("vCPU"), f"{field}['vCPU']"),
        ram_gb=_memory_gb(row.get("Memory"), f"{field}['Memory']"),
        price_per_hour=price,
        currency="USD",
        kind="on_demand",
        extra=extra,
    )


def _keep_cheaper(a: ScrapedOffer, b: ScrapedOffer) -> ScrapedOffer:
    """Two rows for one instance type in one location: keep the cheaper, note the other price (a
    row whose price is unreadable gives way to a readable one)."""
    if bool(a.extra.get(UNREADABLE_PRICE)) != bool(b.extra.get(UNREADABLE_PRICE)):
        return b if a.extra.get(UNREADABLE_PRICE) else a
    keep, other = (a, b) if (a.price_per_hour or 0) < (b.price_per_hour or 0) else (b, a)
    others = sorted({*keep.extra.get("other_prices", []), other.price_per_hour})
    return replace(keep, extra={**keep.extra, "other_prices": others})


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    try:
        n = float(str(value).replace(",", ""))
    except ValueError:
        raise ParseError(f"{where} is not a number: {value!r}") from None
    return n


def _memory_gb(value: Any, where: str) -> float | None:
    if value is None:
        return None
    m = _MEMORY.match(value) if isinstance(value, str) else None
    if not m:
        raise ParseError(f"{where} is not like '2048 GiB': {value!r}")
    return float(m.group(1).replace(",", ""))
