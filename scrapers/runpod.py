"""RunPod GPU pod prices from the public GraphQL ``gpuTypes`` query.

Requests: ``POST https://api.runpod.io/graphql`` with body ``{"query": ...}``, one request (no
pagination), in one of two shapes:

* **anonymous** (no ``$RUNPOD_API_KEY``): ``ANONYMOUS_QUERY``, the fields 2026 keyless clients read
  (getcomputable/gpu-index's 2026 observatory fixture ``runpod/gputypes.json`` and
  ewyluda/gpu-price-index's 2026 recording): ``id displayName memoryInGb maxGpuCount secureCloud
  communityCloud securePrice communityPrice`` and the stock of each cloud,
  ``secureStock: lowestPrice(input: {gpuCount: 1, secureCloud: true}) { stockStatus }`` and
  ``communityStock`` likewise with ``secureCloud: false`` (the ``lowestPrice`` object and its
  ``stockStatus`` are in gpu-index's keyless answer; gpuhunt asks them per cloud). No spot or
  savings-plan prices: in the public 2026 keyless answer every ``secureSpotPrice`` /
  ``communitySpotPrice`` equals that cloud's on-demand price, i.e. no spot price at all.
* **keyed** (``$RUNPOD_API_KEY`` set, sent as ``Authorization: Bearer <key>``): ``GPU_TYPES_QUERY``,
  the anonymous fields plus ``secureSpotPrice communitySpotPrice oneMonthPrice threeMonthPrice
  sixMonthPrice nodeGroupDatacenters { id name }``, fields only ever recorded with a key. When that
  answer carries GraphQL ``errors`` (or comes back HTTP 400, how GraphQL servers refuse a query,
  or 401/403, a key RunPod does not take),
  the anonymous query is asked instead, without the key: the run still collects the on-demand
  and community prices, and ``parse`` returns them as ``PartialOffers`` (the spot and savings-plan
  prices it did not see stay unknown, never read as delisted), the reason naming the errors (the
  key scrubbed from them).

Replay never sends a key (the bundled recording is a keyless answer), so it asks the anonymous query.

``fetch`` returns ``{"query": "anonymous" | "keyed", "fallback": <why, when the keyed query
failed>, "response": <the decoded body {"data": {"gpuTypes": [...]}}>}``; ``parse`` also takes the
bare body and the bare ``gpuTypes`` list (how the recorded 2025 sample was saved).

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
* availability: when the answer has that cloud's ``<cloud>Stock`` object, its ``stockStatus``
  ("Low", "Medium", "High"; null = none in stock) goes to ``extra["stock"]`` (``STOCK_LEVEL``) and
  ``available`` is whether it is not null, for every offer of that cloud; without it
  ``available`` is None (not stated).

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
``memoryInGb``, ``maxGpuCount``, ``secureCloud``, ``communityCloud``, the spot and term prices,
the stock objects and ``nodeGroupDatacenters`` (optional). GraphQL ``errors`` in the answer
``parse`` is given raise ``ParseError``; one GPU type whose price is missing, no number or negative
gives an offer that is quarantined with the field named, the other types are kept.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from scrapers.base import (
    STOCK_LEVEL,
    FetchError,
    Http,
    ParseError,
    PartialOffers,
    ScrapedOffer,
    Scraper,
    as_list,
    field_path,
    positive,
    read_price,
    require,
)

GRAPHQL_URL = "https://api.runpod.io/graphql"
_STOCK = (
    "secureStock: lowestPrice(input: {gpuCount: 1, secureCloud: true}) { stockStatus } "
    "communityStock: lowestPrice(input: {gpuCount: 1, secureCloud: false}) { stockStatus }"
)
_ANONYMOUS_FIELDS = "id displayName memoryInGb maxGpuCount secureCloud communityCloud securePrice communityPrice"
#: What a keyless client asks (see the module docstring).
ANONYMOUS_QUERY = f"{{ gpuTypes {{ {_ANONYMOUS_FIELDS} {_STOCK} }} }}"
#: What is asked with a key: the anonymous fields plus spot, savings-plan prices and datacenters.
GPU_TYPES_QUERY = (
    f"{{ gpuTypes {{ {_ANONYMOUS_FIELDS} secureSpotPrice communitySpotPrice oneMonthPrice "
    f"threeMonthPrice sixMonthPrice nodeGroupDatacenters {{ id name }} {_STOCK} }} }}"
)
log = logging.getLogger(__name__)
TERM_PRICES = (("oneMonthPrice", 1), ("threeMonthPrice", 3), ("sixMonthPrice", 6))
#: Statuses of a keyed query RunPod refused (a query it rejects, a key it does not take): the
#: anonymous query is asked instead.
_REFUSALS = (400, 401, 403)
#: What RunPod puts in the on-demand price of a cloud a GPU type is not in (see the module docstring).
PLACEHOLDER_PRICE = 0.5


class RunpodScraper(Scraper):
    name = "runpod"
    segment = "neocloud"
    display_name = "RunPod"
    homepage = "https://www.runpod.io/pricing"
    endpoint = "POST https://api.runpod.io/graphql (gpuTypes)"
    source_kind = "api"
    fixture_kind = "recording"
    checked_by = "recording: the same GraphQL query's answer, via Jumbo2020/gpu_prices"
    optional_credentials = ("RUNPOD_API_KEY",)
    per_gpu_limit_field = "max_gpu_count"
    kinds = ("on_demand", "community", "spot", "reserved")
    caveats = (
        "prices are per GPU (gpu_count 1; a pod of n GPUs costs n times); global prices, no region; "
        "community = Community Cloud hosts; reserved = 1/3/6-month savings plans"
    )

    async def fetch(self, http: Http) -> dict[str, Any]:
        accept = {"Accept": "application/json"}
        key = None if self.replay else self.credential("RUNPOD_API_KEY")
        if key:
            body, failure = await self._keyed(http, {**accept, "Authorization": f"Bearer {key}"})
            if failure is None:
                return {"query": "keyed", "response": body}
            log.warning("%s: the keyed gpuTypes query failed (%s); asking the anonymous query", self.name, failure)
            anonymous = await http.post_json(GRAPHQL_URL, json={"query": ANONYMOUS_QUERY}, headers=accept)
            return {"query": "anonymous", "fallback": failure, "response": anonymous}
        return {"query": "anonymous", "response": await http.post_json(GRAPHQL_URL, json={"query": ANONYMOUS_QUERY}, headers=accept)}

    async def _keyed(self, http: Http, headers: dict[str, str]) -> tuple[Any, str | None]:
        """The keyed query's answer and ``None``, or why it cannot be used (its GraphQL errors, an
        HTTP 400 refusal, an answer without ``data.gpuTypes``), every secret scrubbed from it."""
        response = await http.request("POST", GRAPHQL_URL, accept=_REFUSALS, json={"query": GPU_TYPES_QUERY}, headers=headers)
        try:
            body = json.loads(response.content)
        except (ValueError, RecursionError):
            if response.status_code in _REFUSALS:
                return None, f"HTTP {response.status_code}"
            raise FetchError(f"{self.name}: POST {GRAPHQL_URL} did not return JSON") from None
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors or response.status_code in _REFUSALS:
            return body, self._scrub(f"HTTP {response.status_code}, GraphQL errors: {_messages(errors) or 'none given'}")
        if not isinstance(body, dict) or not isinstance(body.get("data"), dict) or not isinstance(body["data"].get("gpuTypes"), list):
            return body, "the answer has no data.gpuTypes list"
        return body, None

    def _scrub(self, text: str, limit: int = 300) -> str:
        """``text`` with every secret this scraper holds replaced, cut to ``limit`` characters."""
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def _price(self, gpu: dict[str, Any], key: str, index: int, *, required: bool = False) -> tuple[float | None, dict[str, str]]:
        """A price field as (price, extra): ``None`` when absent, null or (optional prices: spot,
        terms) 0, which RunPod prints for "not offered"; a value that is no number, or a required
        one that is missing, is kept in extra so the offer is quarantined with it. A required price
        (a cloud's hourly price) of 0 is returned as 0: where the cloud's flag says it offers the
        GPU, validation quarantines it with its reason instead of the offer vanishing unexplained."""
        if key not in gpu and not required:
            return None, {}
        price, bad = read_price(gpu, key, at=field_path("data", "gpuTypes", index))
        return (None if price == 0 and not required else price), bad

    def _gpu_types(self, raw: Any) -> list[Any]:
        if isinstance(raw, list):
            return raw
        if not isinstance(raw, dict):
            raise ParseError(f"{self.name}: payload should be a GraphQL response object, got {type(raw).__name__}")
        errors = raw.get("errors")
        if errors:
            # not cut here: the collector scrubs secrets first, then cuts, so no prefix of a key survives
            raise ParseError(f"{self.name}: GraphQL errors: {_messages(errors)}")
        return require(raw, "data", "gpuTypes", provider=self.name, kind=list)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        query: str | None = None
        fallback: Any = None
        if isinstance(raw, dict) and "response" in raw and "data" not in raw:  # what fetch returns
            query, fallback, raw = raw.get("query"), raw.get("fallback"), raw["response"]
        offers = self._offers(self._gpu_types(raw), query)
        if fallback:
            return PartialOffers(offers, reason=(
                f"{self.name}: the keyed gpuTypes query failed ({fallback}); the anonymous query answered, "
                "without spot or savings-plan prices, which stay unknown"
            ))
        return offers

    def _offers(self, gpu_types: list[Any], query: str | None) -> list[ScrapedOffer]:
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
                "query": query,
            }
            base_extra = {k: v for k, v in base_extra.items() if v is not None}
            stock = {cloud: _stock(gpu.get(f"{cloud}Stock")) for cloud in ("secure", "community")}
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
                extra = {**base_extra, "cloud": cloud, **stock[cloud][1]}
                common_cloud = {**common, "available": stock[cloud][0]}
                amount = None if price[0] == 0 and gpu.get(flag) is not True else price[0]
                if price[0] == PLACEHOLDER_PRICE and not price[1] and gpu.get(flag) is None:
                    placeholders.append(sku)  # no flag to tell: the placeholder is not a price
                elif amount is not None or price[1]:
                    offers.append(self.offer(sku=sku, kind=on_demand_kind, price_per_hour=amount,
                                             extra={**extra, **price[1]}, **common_cloud))
                spot, bad_spot = self._price(gpu, spot_key, index)
                if spot is not None or bad_spot:
                    offers.append(self.offer(sku=sku, kind="spot", price_per_hour=spot, extra={**extra, **bad_spot}, **common_cloud))
            for key, months in TERM_PRICES:
                term_price, bad_term = self._price(gpu, key, index)
                if term_price is not None or bad_term:
                    offers.append(
                        self.offer(
                            sku=f"{gpu_id}:secure",
                            kind="reserved",
                            term_months=months,
                            price_per_hour=term_price,
                            extra={**base_extra, "cloud": "secure", "plan": "savings plan", **stock["secure"][1], **bad_term},
                            available=stock["secure"][0],
                            **common,
                        )
                    )
        if placeholders:
            log.info("%s: %d on-demand prices of $%.2f without a cloud flag skipped as placeholders: %s",
                     self.name, len(placeholders), PLACEHOLDER_PRICE, ", ".join(placeholders))
        if not offers:
            raise ParseError(f"{self.name}: no GPU type has a price (all 0 or null)")
        return offers


def _messages(errors: Any) -> str:
    """GraphQL ``errors`` as one line: their messages joined."""
    items = errors if isinstance(errors, list) else [errors] if errors else []
    return "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in items)


def _stock(node: Any) -> tuple[bool | None, dict[str, Any]]:
    """A cloud's ``lowestPrice`` stock object as (available, extra): no object says nothing
    (None, {}); its ``stockStatus`` null means none in stock (False), a level means some (True)."""
    if not isinstance(node, dict) or "stockStatus" not in node:
        return None, {}
    status = node["stockStatus"]
    if status is None:
        return False, {STOCK_LEVEL: None}
    return True, {STOCK_LEVEL: str(status)}
