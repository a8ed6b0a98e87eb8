"""Amazon Web Services: EC2 GPU instances, Linux on-demand list prices per region.

Two sources, chosen with ``$AWS_PRICING_SOURCE`` (or the ``source=`` argument):

* ``pricing-json`` (default): AWS's light pricing JSON, the documents its own on-demand pricing
  page loads, one per location: ``GET https://b0.p.awsstatic.com/pricing/2.0/meteredUnitMaps/ec2/
  USD/current/ec2-ondemand-without-sec-sel/<Location>/Linux/index.json`` with the location's
  display name URL-quoted (``US%20East%20(N.%20Virginia)``). No auth. About 60 KB compressed per
  location, so every public region is fetched by default (4 at a time). A 404 means AWS has no
  listing for that location: logged and skipped; all of them 404 is an error (the URL moved).
  Parsed by ``scrapers._aws_pricing_json``.
* ``offer-file``: the Price List API bulk offer files, ``GET https://pricing.us-east-1.amazonaws.com/
  offers/v1.0/aws/AmazonEC2/current/<region>/index.json``. Several hundred MB each, so they are
  streamed to temporary files and parsed with ijson (``scrapers._aws_offer_file``); by default only
  five regions. They carry the same prices plus every attribute of every SKU.

Regions: ``$AWS_PRICING_REGIONS`` (comma- or space-separated codes) or ``regions=``; the default is
every public region of ``scrapers._aws_common.REGIONS`` for the pricing JSON and ``DEFAULT_REGIONS``
for offer files. China regions live on another partition and are not supported. Spot prices come
from the separate ``aws_spot`` provider (another feed, another schedule, its own failures).

GPU model and count come from the catalog's instance-type table; Trainium and Inferentia
instances are skipped (they are not GPUs; see ``scrapers._aws_common``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from scrapers._aws_common import REGION_CODE, REGIONS, REGIONS_ENV, split_regions
from scrapers._aws_offer_file import OFFER_URL, OfferFiles, parse_offer_files
from scrapers._aws_pricing_json import PRICING_URL, parse_documents, pricing_url
from scrapers.base import FetchError, Http, ScrapedOffer, Scraper
from tracker.errors import ConfigError

__all__ = [
    "CONCURRENCY",
    "DEFAULT_REGIONS",
    "OFFER_URL",
    "PRICING_JSON_REGIONS",
    "REGIONS_ENV",
    "SOURCE_ENV",
    "SOURCES",
    "AwsScraper",
    "OfferFiles",
    "pricing_url",
]

log = logging.getLogger("scrapers.aws")

SOURCE_ENV: Final = "AWS_PRICING_SOURCE"
SOURCES: Final = ("pricing-json", "offer-file")
#: Offer-file default: the regions with the most GPU capacity (each file is hundreds of MB).
DEFAULT_REGIONS: Final = ("us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1")
#: Pricing-JSON default: every public region whose location name is known.
PRICING_JSON_REGIONS: Final = tuple(code for code, r in REGIONS.items() if r.public)
#: Pricing-JSON documents fetched at once.
CONCURRENCY: Final = 4


class AwsScraper(Scraper):
    name: ClassVar[str] = "aws"
    segment: ClassVar[str] = "hyperscaler"
    display_name: ClassVar[str] = "Amazon Web Services (EC2)"
    homepage: ClassVar[str] = "https://aws.amazon.com/ec2/pricing/on-demand/"
    endpoint: ClassVar[str] = f"GET {PRICING_URL.format(location='<Location>')}"
    source_kind: ClassVar[str] = "api"
    fixture_kind: ClassVar[str] = "recording"
    checked_by: ClassVar[str] = "recording: AWS's published price list JSON, via ewyluda/gpu-price-index"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    caveats: ClassVar[str] = (
        "Linux shared-tenancy on-demand list prices per region ($AWS_PRICING_REGIONS; "
        "$AWS_PRICING_SOURCE=offer-file reads the bulk Price List files instead); spot prices are the aws_spot provider; "
        "no Capacity Blocks, Local Zones or savings plans; Trainium/Inferentia skipped (not GPUs); "
        "GPU model from AWS instance-type pages."
    )
    #: On-demand list prices rarely move: daily.
    default_interval_s: ClassVar[int] = 86400
    #: pricing JSON on awsstatic.com, offer files on pricing.<region>.amazonaws.com
    hosts: ClassVar[tuple[str, ...]] = ("b0.p.awsstatic.com", "pricing.us-east-1.amazonaws.com")
    #: a location's pricing JSON is a few MB; a regional offer file is hundreds of MB or more
    max_body_bytes: ClassVar[int] = 128 << 20
    max_download_bytes: ClassVar[int] = 6 << 30

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        replay: bool = False,
        regions: Sequence[str] | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(env, replay=replay)
        source = source or self.env.get(SOURCE_ENV, "").strip() or SOURCES[0]
        if source not in SOURCES:
            raise ConfigError(f"aws: {SOURCE_ENV} must be one of {', '.join(SOURCES)}, got {source!r}")
        self.source: str = source
        if regions is None:
            regions = split_regions(self.env.get(REGIONS_ENV, "")) or (
                PRICING_JSON_REGIONS if source == "pricing-json" else DEFAULT_REGIONS
            )
        bad = [r for r in regions if not REGION_CODE.match(r)]
        if bad:
            raise ConfigError(f"aws: {REGIONS_ENV} has an invalid region code {bad[0]!r} (expected e.g. us-east-1)")
        unnamed = [r for r in regions if source == "pricing-json" and r not in REGIONS]
        if unnamed:
            raise ConfigError(
                f"aws: no price-list location name is known for region {unnamed[0]!r}; "
                f"use {SOURCE_ENV}=offer-file for it"
            )
        self.regions: tuple[str, ...] = tuple(dict.fromkeys(regions))

    # --- fetch ----------------------------------------------------------------------------

    async def fetch(self, http: Http) -> Any:
        if self.source == "offer-file":
            return await self._fetch_offer_files(http)
        return await self._fetch_pricing_json(http)

    async def _fetch_pricing_json(self, http: Http) -> dict[str, Any]:
        """``{location: document}`` for every configured region that has a listing (404: none)."""
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(region: str) -> tuple[str, Any]:
            location = REGIONS[region].location
            async with gate:
                return location, await http.get_json_or_none(pricing_url(location))

        results = await asyncio.gather(*(one(r) for r in self.regions))
        documents = {location: doc for location, doc in results if doc is not None}
        missing = [location for location, doc in results if doc is None]
        if missing:
            log.info("aws: no on-demand price list (HTTP 404) for %s", ", ".join(missing))
        if not documents:
            raise FetchError(f"aws: every pricing JSON answered 404 ({len(results)} locations, e.g. {pricing_url(missing[0])})")
        return documents

    async def _fetch_offer_files(self, http: Http) -> OfferFiles:
        """Stream each region's offer file to disk; return the owned temp paths, in region order."""
        files = OfferFiles()
        try:
            for region in self.regions:
                url = OFFER_URL.format(region=region)
                files.add(await http.download(url), region, url)
        except BaseException:
            files.cleanup()
            raise
        return files

    # --- parse ----------------------------------------------------------------------------

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        """Pricing-JSON documents by location (a mapping), or offer files (paths / ``OfferFiles``)."""
        if isinstance(raw, Mapping):
            return parse_documents(raw, self.name)
        return parse_offer_files(raw, self.name)
