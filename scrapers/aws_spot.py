"""Amazon Web Services: EC2 GPU spot prices per region, from AWS's public spot price feed.

What is called: ``GET https://website.spot.ec2.aws.a2z.com/spot.json``, the feed behind AWS's spot
pricing page (https://aws.amazon.com/ec2/spot/pricing/). No auth, one request for every region
(a few MB).

Why a provider of its own rather than a second fetch of ``aws``: spot prices move through the day
while on-demand list prices move a few times a year (hourly against daily), and the feed is an
unversioned website file that can change shape without notice. Apart, a broken spot feed fails
only the spot run and AWS's on-demand prices stay current; each keeps its own schedule and
failure count. Offers are ``kind="spot"`` under the provider ``aws_spot``.

Response::

    {"vers": 0.01, "config": {"rate": "perhr", "valueColumns": ["linux", "mswin"], "currencies": ["USD"],
     "regions": [{"region": "us-east-2", "instanceTypes": [{"type": "gpuCurrentGen",
        "sizes": [{"size": "p5.48xlarge", "valueColumns": [
            {"name": "linux", "prices": {"USD": "20.3632"}}, {"name": "mswin", "prices": {"USD": "N/A*"}}]}]}]}]}}

The feed is served as ``application/x-javascript``; its predecessor (``spot.js``) wrapped the same
object in ``callback(...);``, so ``fetch`` returns the body as text and ``parse`` accepts it with or
without that wrapper (or an already decoded object).

The Linux column is the price of the whole instance per hour in USD; "N/A*" means not offered
there (its footnote). A size whose Linux ``prices.USD`` is missing, empty, no number or negative
is quarantined with that field's path named; the other sizes are kept. A size can be listed twice in a region (seen for g6 and gr6 sizes), the
same price both times; differing duplicates keep the lower and note the other. ``type`` groups
are not trusted to mean GPU (``gpuCurrentGen`` also holds Trainium and Inferentia): a size is a
GPU offer when the catalog's instance-type table maps it; Trainium and Inferentia are skipped
(see ``scrapers._aws_common``). Regions: every region in the feed, or only those in
``$AWS_PRICING_REGIONS`` when set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final

from scrapers._aws_common import (
    REGION_CODE,
    REGIONS_ENV,
    country_of,
    gpu_of,
    split_regions,
)
from scrapers.base import (
    UNREADABLE_PRICE,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    read_price,
)
from tracker.errors import ConfigError

SPOT_URL: Final = "https://website.spot.ec2.aws.a2z.com/spot.json"
#: The price of an OS that is not offered for a size (the feed's footnote "*").
NOT_OFFERED: Final = frozenset({"N/A*", "N/A"})
_JSONP: Final = re.compile(r"^\s*callback\((.*)\);?\s*$", re.DOTALL)


class AwsSpotScraper(Scraper):
    name: ClassVar[str] = "aws_spot"
    segment: ClassVar[str] = "hyperscaler"
    display_name: ClassVar[str] = "Amazon Web Services (EC2 Spot)"
    homepage: ClassVar[str] = "https://aws.amazon.com/ec2/spot/pricing/"
    endpoint: ClassVar[str] = f"GET {SPOT_URL}"
    source_kind: ClassVar[str] = "api"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = "reference: the 2026 shape of the spot.json the EC2 Spot page reads, via alexei-led/spotinfo (structure only, own values)"
    kinds: ClassVar[tuple[str, ...]] = ("spot",)
    caveats: ClassVar[str] = (
        "Linux spot prices per region from the feed behind AWS's spot pricing page (one price per region, "
        "not per availability zone; interruptible); Trainium/Inferentia skipped (not GPUs); "
        "GPU model from AWS instance-type pages."
    )

    def __init__(self, env: Mapping[str, str] | None = None, *, replay: bool = False, regions: Sequence[str] | None = None) -> None:
        super().__init__(env, replay=replay)
        if regions is None:
            regions = split_regions(self.env.get(REGIONS_ENV, ""))
        bad = [r for r in regions if not REGION_CODE.match(r)]
        if bad:
            raise ConfigError(f"aws_spot: {REGIONS_ENV} has an invalid region code {bad[0]!r} (expected e.g. us-east-1)")
        #: Empty: every region in the feed.
        self.regions: frozenset[str] = frozenset(regions)

    async def fetch(self, http: Http) -> Any:
        return await http.get_text(SPOT_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        offers: dict[tuple[str, str], ScrapedOffer] = {}
        seen_regions = 0
        for region, size, price, bad in spot_prices(raw, self.name):
            if self.regions and region not in self.regions:
                continue
            seen_regions += 1
            gpu = gpu_of(size)
            if gpu is None:
                continue
            offer = self.offer(
                sku=size, region=region, country=country_of(region), gpu_raw=size, gpu=gpu[0], gpu_count=gpu[1],
                price_per_hour=price, currency="USD", kind="spot", extra={"source": "spot.json", **bad},
            )
            old = offers.get((size, region))
            offers[(size, region)] = offer if old is None else _one_of(old, offer)
        if not offers:
            where = f"{seen_regions} priced size(s)" + (f" in {sorted(self.regions)}" if self.regions else "")
            raise ParseError(f"{self.name}: no Linux GPU spot prices among {where} of {SPOT_URL}")
        return list(offers.values())


def _one_of(a: ScrapedOffer, b: ScrapedOffer) -> ScrapedOffer:
    """A size listed twice in a region: the same price is one offer; differing prices keep the
    lower and note the other; an unreadable price gives way to a readable one."""
    if bool(a.extra.get(UNREADABLE_PRICE)) != bool(b.extra.get(UNREADABLE_PRICE)):
        return b if a.extra.get(UNREADABLE_PRICE) else a
    if a.price_per_hour == b.price_per_hour or a.price_per_hour is None or b.price_per_hour is None:
        return a
    keep, other = (b, a) if b.price_per_hour < a.price_per_hour else (a, b)
    return replace(keep, extra={**keep.extra, "other_prices": sorted({*keep.extra.get("other_prices", []), other.price_per_hour})})


def spot_prices(raw: Any, provider: str = "aws_spot") -> list[tuple[str, str, float | None, dict[str, str]]]:
    """Every (region, instance type, Linux USD per hour, extra) of the feed; sizes not offered are
    left out.

    Checks the envelope (hourly rate, USD, a linux column) and every container it reads, raising
    ``ParseError`` naming the provider and the field. One size's price that is missing, no number
    or negative is ``(None or the negative price, {UNREADABLE_PRICE: reason naming its path})``, so
    that size alone is quarantined.
    """
    where = f"{provider}: spot.json"
    raw = _decode(raw, where)
    config = raw.get("config") if isinstance(raw, Mapping) else None
    if not isinstance(config, Mapping):
        raise ParseError(f"{where} has no 'config' object")
    if config.get("rate") != "perhr":
        raise ParseError(f"{where}: config.rate is {config.get('rate')!r}, not 'perhr'")
    currencies = config.get("currencies")
    if not isinstance(currencies, list) or "USD" not in currencies:
        raise ParseError(f"{where}: config.currencies {currencies!r} has no 'USD'")
    columns = config.get("valueColumns")
    if not isinstance(columns, list) or "linux" not in columns:
        raise ParseError(f"{where}: config.valueColumns {columns!r} has no 'linux'")
    regions = config.get("regions")
    if not isinstance(regions, list) or not regions:
        raise ParseError(f"{where}: config.regions should be a non-empty list")
    out: list[tuple[str, str, float | None, dict[str, str]]] = []
    for i, entry in enumerate(regions):
        here = f"{where}: config.regions[{i}]"
        if not isinstance(entry, Mapping):
            raise ParseError(f"{here} should be an object")
        region = entry.get("region")
        if not isinstance(region, str) or not region:
            raise ParseError(f"{here}.region is missing")
        here = f"{where}: region {region}"
        groups = entry.get("instanceTypes")
        if not isinstance(groups, list):
            raise ParseError(f"{here}: instanceTypes should be a list")
        for g, group in enumerate(groups):
            sizes = group.get("sizes") if isinstance(group, Mapping) else None
            if not isinstance(sizes, list):
                raise ParseError(f"{here}: instanceTypes[{g}].sizes should be a list")
            for s, item in enumerate(sizes):
                field = f"{here}: instanceTypes[{g}].sizes[{s}]"
                size = item.get("size") if isinstance(item, Mapping) else None
                if not isinstance(size, str) or not size:
                    raise ParseError(f"{field}.size is missing")
                at = field_path("config", "regions", i, "instanceTypes", g, "sizes", s)
                price, bad = _linux_price(item, f"{here}: {size}", at)
                if price is not None or bad:
                    out.append((region, size, price, bad))
    return out


def _decode(raw: Any, where: str) -> Any:
    """The feed's object from its body text (plain JSON or ``callback(...);``), or ``raw`` as is."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return raw
    m = _JSONP.match(raw)
    try:
        return json.loads(m.group(1) if m else raw)
    except ValueError as exc:
        raise ParseError(f"{where} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def _linux_price(item: Mapping[str, Any], where: str, at: str) -> tuple[float | None, dict[str, str]]:
    """The size's Linux price as ``read_price`` gives it (``(None, {})``: not offered there)."""
    columns = item.get("valueColumns")
    if not isinstance(columns, list):
        raise ParseError(f"{where}: valueColumns should be a list")
    linux = [k for k, c in enumerate(columns) if isinstance(c, Mapping) and c.get("name") == "linux"]
    if len(linux) != 1:
        raise ParseError(f"{where}: valueColumns has {len(linux)} 'linux' entries, expected 1")
    prices = columns[linux[0]].get("prices")
    if not isinstance(prices, Mapping):
        raise ParseError(f"{where}: linux prices should be an object")
    value = prices.get("USD")
    if isinstance(value, str) and value.strip() in NOT_OFFERED:
        return None, {}
    return read_price(prices, "USD", at=field_path(at, "valueColumns", linux[0], "prices"), required=True)
