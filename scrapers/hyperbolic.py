"""Hyperbolic on-demand GPU prices from its public rental-options API.

Request: ``GET https://api.hyperbolic.ai/v2/alpha/on-demand/rental-options`` (answers
anonymously; Hyperbolic's logged-out GPU page shows the same list). One request, no pagination:
the body is a bare JSON list whose membership follows the inventory.

Each entry is one rentable option: ``gpuType`` ("h100"), ``gpuFormFactor`` ("sxm5", "pcie"),
``gpuCount``, ``region``, ``machineType`` ("virtual-machine" / "bare-metal"),
``connectionType`` ("ethernet" / "infiniband", with ``ethernetVariant`` "normal" / "rocev2"),
``nodes[]`` (CPU, RAM, storage per node), ``enabled`` and ``costPerHourCents``: the hourly price
of the WHOLE option in US cents, so ``price_per_hour`` is cents / 100 for ``gpuCount`` GPUs.
An option with ``enabled`` false cannot be rented and gives no offer. ``totalAvailable``, when
present, is the number of such options free now (``available`` = >0, ``available_count`` = it times
``gpuCount`` GPUs; missing = unknown). The
API also returns Hyperbolic's own supplier cost (``providerCostPerHourCents``); it is not what a
customer pays and is never read. A new ``*PerHourCents`` key raises ``ParseError`` so a new
price tier is not dropped silently. An enabled option whose ``costPerHourCents`` or ``gpuCount``
is missing, no number or negative is quarantined with the field named; the other options are kept.

One ``on_demand`` offer per option: sku
``"<gpuType>-<gpuFormFactor>-<gpuCount>x-<machineType>-<connectionType>[-<ethernetVariant>]"``,
``gpu_raw`` ``"<gpuType> <gpuFormFactor>"`` (``"h100 sxm5"``), region ``region``. Two options
with the same sku and region (which would be two prices for one thing) raise ``ParseError``.
"""

from __future__ import annotations

from typing import Any

from scrapers.base import (
    UNREADABLE_PRICE,
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    free_count,
    positive,
    read_count,
    read_price,
)

URL = "https://api.hyperbolic.ai/v2/alpha/on-demand/rental-options"
_KNOWN_CENT_KEYS = frozenset({"costPerHourCents", "providerCostPerHourCents"})


class HyperbolicScraper(Scraper):
    name = "hyperbolic"
    segment = "marketplace"
    display_name = "Hyperbolic"
    homepage = "https://hyperbolic.ai/"
    endpoint = "GET https://api.hyperbolic.ai/v2/alpha/on-demand/rental-options"
    kinds = ("on_demand",)
    source_kind = "api"
    fixture_kind = "reference"
    checked_by = "reference: the 2026 shape of an anonymous rental-options answer shown by getcomputable/gpu-index (structure only, own values)"
    caveats = "reference fixture (real 2026 shape, own values); price is for the whole option (costPerHourCents / 100 for gpuCount GPUs); disabled options are skipped"

    async def fetch(self, http: Http) -> Any:
        return await http.get_json(URL, headers={"Accept": "application/json"})

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if not isinstance(raw, list):
            raise ParseError(f"{self.name}: payload (the rental options) should be a list, got {type(raw).__name__}")
        if not raw:
            raise ParseError(f"{self.name}: payload (the rental options) lists no option")
        offers: list[ScrapedOffer] = []
        seen: set[tuple[str, str]] = set()
        for index, option in enumerate(raw):
            offer = self._offer(option, index)
            if offer is None:
                continue
            if (offer.sku, offer.region) in seen:
                raise ParseError(f"{self.name}: two options are {offer.sku} in {offer.region}")
            seen.add((offer.sku, offer.region))
            offers.append(offer)
        if not offers:
            raise ParseError(f"{self.name}: none of the {len(raw)} options is enabled")
        return offers

    def _need(self, option: dict[str, Any], key: str, index: int, kind: type | tuple[type, ...]) -> Any:
        """``option[key]`` of type ``kind``, or a ParseError naming the option and the key."""
        value = option.get(key)
        if not isinstance(value, kind):
            what = "has no" if value is None else f"has a {type(value).__name__} for"
            raise ParseError(f"{self.name}: option {index} {what} {key!r}")
        return value

    def _text(self, option: dict[str, Any], key: str, index: int) -> str:
        value = self._need(option, key, index, str).strip()
        if not value:
            raise ParseError(f"{self.name}: option {index} has an empty {key!r}")
        return value

    def _offer(self, option: Any, index: int) -> ScrapedOffer | None:
        if not isinstance(option, dict):
            raise ParseError(f"{self.name}: option {index} (payload[{index}]) should be an object, got {type(option).__name__}")
        unknown = sorted(k for k in option if k.endswith("PerHourCents") and k not in _KNOWN_CENT_KEYS)
        if unknown:
            raise ParseError(f"{self.name}: option {index} has unknown price field(s) {unknown}")
        enabled = self._need(option, "enabled", index, bool)
        gpu_type = self._text(option, "gpuType", index)
        form = self._text(option, "gpuFormFactor", index)
        region = self._text(option, "region", index)
        machine = self._text(option, "machineType", index)
        connection = self._text(option, "connectionType", index)
        variant = option.get("ethernetVariant")
        if not enabled:
            return None
        at = field_path("payload", index)
        count, bad = read_count(option, "gpuCount", at=at, zero=False, strings=False)
        cents, bad_price = read_price(option, "costPerHourCents", at=at, required=True, strings=False)
        if not bad and not count.is_integer():
            bad = {UNREADABLE_PRICE: f"GPU count field {field_path(at, 'gpuCount')} holds {count:g}, not a whole number"}
        bad = bad or bad_price  # either one quarantines this option, not the run
        count = int(count) if count.is_integer() else count
        sku = f"{gpu_type}-{form}-{count}x-{machine}-{connection}"
        if isinstance(variant, str) and variant.strip():
            sku += f"-{variant.strip()}"
        nodes = option.get("nodes") if isinstance(option.get("nodes"), list) else []
        node = nodes[0] if len(nodes) == 1 and isinstance(nodes[0], dict) else {}
        vcpus = node.get("vcpuCount", node.get("cpuCount"))
        ram = node.get("ramGb")
        free = option.get("totalAvailable")
        free = free if isinstance(free, int) and not isinstance(free, bool) and free >= 0 else None
        return self.offer(
            sku=sku,
            gpu_raw=f"{gpu_type} {form}",
            gpu_count=count,
            price_per_hour=None if cents is None else round(cents / 100, 4),
            kind="on_demand",
            region=region,
            vcpus=positive(vcpus),
            ram_gb=positive(ram),
            currency="USD",
            available=None if free is None else free > 0,
            available_count=None if free is None or bad else free_count(free, count),
            extra={
                "machine_type": machine,
                "connection_type": connection,
                "ethernet_variant": variant,
                "total_available": free,
                "nodes": len(nodes),
                "cpu_model": node.get("cpuModel"),
                "storage_gb": node.get("storageGb"),
                **bad,
            },
        )
