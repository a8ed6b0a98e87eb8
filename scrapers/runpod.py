"""RunPod GPU pod prices from the public GraphQL ``gpuTypes`` query.

Request: ``POST https://api.runpod.io/graphql`` with body ``{"query": GPU_TYPES_QUERY}`` (the
``gpuTypes`` fields listed below; one request, no pagination). Auth: none needed for these
price fields; when ``$RUNPOD_API_KEY`` is set it is sent as ``Authorization: Bearer <key>``.
``fetch`` returns the decoded body ``{"data": {"gpuTypes": [...]}}``; ``parse`` also takes the
bare ``gpuTypes`` list (how the recorded 2025 sample was saved).

Per GPU, not per pod: RunPod quotes every price per GPU per hour and the payload has no GPU
count (``maxGpuCount`` is only the largest pod you may ask for, kept in ``extra``). So every
offer has ``gpu_count`` 1 and ``price_per_hour`` is the price of one GPU; a pod of n GPUs costs
n times that. Prices are global: no region (``region`` ""); the few
``nodeGroupDatacenters[].id`` that are listed go to ``extra["datacenters"]``.

What is extracted per GPU type (sku = ``"<id>:secure"`` or ``"<id>:community"``):

* ``securePrice`` -> ``on_demand`` (Secure Cloud); ``communityPrice`` -> ``community``
* ``secureSpotPrice`` / ``communitySpotPrice`` -> ``spot`` (interruptible), under the secure /
  community sku
* ``oneMonthPrice`` / ``threeMonthPrice`` / ``sixMonthPrice`` -> ``reserved`` with term_months
  1 / 3 / 6 (savings-plan prices, discounts on the secure price; under the secure sku)

A price of ``0`` or ``null`` means "not offered" and gives no offer. When ``secureCloud`` or
``communityCloud`` is ``false`` that cloud's on-demand and spot prices are skipped too: RunPod
fills them with placeholders there (e.g. ``communityPrice`` 0.5 for MI300X and B200, which are
not on Community Cloud). A payload without the flags (a smaller query) cannot say which cloud a
type is in, so there an on-demand price of exactly ``PLACEHOLDER_PRICE`` ($0.50) is taken for the
placeholder and skipped (``skipped_placeholders`` is logged): in the 2025 recording, which has the
flags, every on-demand 0.50 sits in a cloud flagged ``false``. Not tracked: ``clusterPrice`` (Instant Clusters) and ``oneWeekPrice``
(not a whole number of months). The ``unknown`` GPU type (all prices 0) gives nothing.

Keys relied on: ``data.gpuTypes[]``, ``id`` (gpu_raw, the full model name such as
``"NVIDIA H100 80GB HBM3"``), ``securePrice``, ``communityPrice`` (required); ``displayName``,
``memoryInGb``, ``maxGpuCount``, ``secureCloud``, ``communityCloud``, the spot and term prices
and ``nodeGroupDatacenters`` (optional). GraphQL ``errors`` (a renamed field, say) raise
``ParseError``; one GPU type whose price is missing, no number or negative gives an offer that is
quarantined with the field named, the other types are kept.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    as_list,
    field_path,
    positive,
    read_price,
    require,
)

GRAPHQL_URL = "https://api.runpod.io/graphql"
GPU_TYPES_QUERY = (
    "{ gpuTypes { id displayName memoryInGb maxGpuCount secureCloud communityCloud securePrice "
    "communityPrice communitySpotPrice secureSpotPrice clusterPrice oneWeekPrice oneMonthPrice "
    "threeMonthPrice sixMonthPrice nodeGroupDatacenters { id name } } }"
)
log = logging.getLogger(__name__)
TERM_PRICES = (("oneMonthPrice", 1), ("threeMonthPrice", 3), ("sixMonthPrice", 6))
#: What RunPod puts in the on-demand price of a cloud a GPU type is not in (see the module docstring).
PLACEHOLDER_PRICE = 0.5


class RunpodScraper(Scraper):
    name = "runpod"
    display_name = "RunPod"
    homepage = "https://www.runpod.io/pricing"
    endpoint = "POST https://api.runpod.io/graphql (gpuTypes)"
    source_kind = "api"
    fixture_kind = "recording"
    optional_credentials = ("RUNPOD_API_KEY",)
    per_gpu_limit_field = "max_gpu_count"
    kinds = ("on_demand", "community", "spot", "reserved")
    caveats = (
        "prices are per GPU (gpu_count 1; a pod of n GPUs costs n times); global prices, no region; "
        "community = Community Cloud hosts; reserved = 1/3/6-month savings plans"
    )

    async def fetch(self, http: Http) -> Any:
        headers = {"Accept": "application/json"}
        key = self.credential("RUNPOD_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return await http.post_json(GRAPHQL_URL, json={"query": GPU_TYPES_QUERY}, headers=headers)

    def _price(self, gpu: dict[str, Any], key: str, index: int, *, required: bool = False) -> tuple[float | None, dict[str, str]]:
        """A price field as (price, extra): ``None`` when absent, null or 0 (not offered); a value
        that is no number, or a required one that is missing, is kept in extra so the offer is
        quarantined with it."""
        if key not in gpu and not required:
            return None, {}
        price, bad = read_price(gpu, key, at=field_path("data", "gpuTypes", index))
        return (None if price == 0 else price), bad

    def _gpu_types(self, raw: Any) -> list[Any]:
        if isinstance(raw, list):
            return raw
        if not isinstance(raw, dict):
            raise ParseError(f"{self.name}: payload should be a GraphQL response object, got {type(raw).__name__}")
        errors = raw.get("errors")
        if errors:
            messages = "; ".join(
                str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in (errors if isinstance(errors, list) else [errors])
            )
            # not cut here: the collector scrubs secrets first, then cuts, so no prefix of a key survives
            raise ParseError(f"{self.name}: GraphQL errors: {messages}")
        return require(raw, "data", "gpuTypes", provider=self.name, kind=list)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        gpu_types = self._gpu_types(raw)
        if not gpu_types:
            raise ParseError(f"{self.name}: gpuTypes is empty")
        offers: list[ScrapedOffer] = []
        placeholders: list[str] = []
        for index, gpu in enumerate(gpu_types):
            if not isinstance(gpu, dict):
                raise ParseError(f"{self.name}: gpuTypes[{index}] should be an object, got {type(gpu).__name__}")
            gpu_id = gpu.get("id")
            if not isinstance(gpu_id, str) or not gpu_id.strip():
                raise ParseError(f"{self.name}: gpuTypes[{index}] has no 'id'")
            secure_price = self._price(gpu, "securePrice", index, required=True)
            community_price = self._price(gpu, "communityPrice", index, required=True)
            memory = gpu.get("memoryInGb")
            datacenters = [d.get("id") for d in as_list(gpu.get("nodeGroupDatacenters")) if isinstance(d, dict) and d.get("id")]
            base_extra = {
                "display_name": gpu.get("displayName"),
                "max_gpu_count": gpu.get("maxGpuCount"),
                "datacenters": datacenters or None,
                "per_gpu": True,
            }
            base_extra = {k: v for k, v in base_extra.items() if v is not None}
            common: dict[str, Any] = {
                "gpu_raw": gpu_id,
                "gpu_count": 1,
                "gpu_memory_gb": positive(memory),
            }
            for cloud, flag, on_demand_kind, price, spot_key in (
                ("secure", "secureCloud", "on_demand", secure_price, "secureSpotPrice"),
                ("community", "communityCloud", "community", community_price, "communitySpotPrice"),
            ):
                if gpu.get(flag) is False:
                    continue  # not in this cloud: its prices are placeholders
                sku = f"{gpu_id}:{cloud}"
                extra = {**base_extra, "cloud": cloud}
                if price[0] == PLACEHOLDER_PRICE and not price[1] and gpu.get(flag) is None:
                    placeholders.append(sku)  # no flag to tell: the placeholder is not a price
                elif price[0] is not None or price[1]:
                    offers.append(self.offer(sku=sku, kind=on_demand_kind, price_per_hour=price[0],
                                             extra={**extra, **price[1]}, **common))
                spot, bad_spot = self._price(gpu, spot_key, index)
                if spot is not None or bad_spot:
                    offers.append(self.offer(sku=sku, kind="spot", price_per_hour=spot, extra={**extra, **bad_spot}, **common))
            for key, months in TERM_PRICES:
                term_price, bad_term = self._price(gpu, key, index)
                if term_price is not None or bad_term:
                    offers.append(
                        self.offer(
                            sku=f"{gpu_id}:secure",
                            kind="reserved",
                            term_months=months,
                            price_per_hour=term_price,
                            extra={**base_extra, "cloud": "secure", "plan": "savings plan", **bad_term},
                            **common,
                        )
                    )
        if placeholders:
            log.info("%s: %d on-demand prices of $%.2f without a cloud flag skipped as placeholders: %s",
                     self.name, len(placeholders), PLACEHOLDER_PRICE, ", ".join(placeholders))
        if not offers:
            raise ParseError(f"{self.name}: no GPU type has a price (all 0 or null)")
        return offers
