"""OVHcloud Public Cloud GPU instance prices from the public order catalogue (no key).

Request: ``GET https://eu.api.ovh.com/v1/order/catalog/public/cloud?ovhSubsidiary=FR``, one
anonymous call (the ``/order/catalog/public/*`` routes of the OVHcloud API need no application
key; ``/v1`` is the 2026 path of the older ``/1.0``). The catalogue is per *subsidiary*, which
fixes the currency and tax: ``FR`` prices in euros excluding VAT and lists every public-cloud
region sold from Europe and Canada. The currency is read from the payload's
``locale.currencyCode``, never assumed: offers carry it (EUR today) and nothing is converted here
(the pipeline's ``currency_rates`` setting converts EUR with a dated rate, as for Scaleway).

Shape read (the catalogue's own names):

* ``plans[]``: the plan ``planCode == "project"`` and its ``addonFamilies[]`` entry named
  ``"instance"``, whose ``addons`` are the instance plan codes (``"h100-380.consumption"``,
  ``"h100-380.monthly.postpaid"``, ...);
* ``addons[]``: one per plan code, with ``invoiceName`` (the flavor, ``"h100-380"``),
  ``pricings[]`` and ``configurations[]`` (``{"name": "region", "values": [...]}``), and
  ``blobs.technical`` (``gpu.model``, ``gpu.number``, ``gpu.memory.size`` in GB,
  ``cpu.cores``/``threads``, ``memory.size`` in GB) and ``blobs.tags`` (``"active"``, ...).

Prices are integers in 10^-8 of the currency (``price: 280000000`` is 2.80). A pricing with
``intervalUnit "hour"`` and ``capacities`` holding ``"consumption"`` is the pay-as-you-go
hourly price: an ``on_demand`` offer for the whole instance. One with ``intervalUnit "month"``
and ``"renew"`` is OVHcloud's monthly plan (a flat price for the month, billed whether used or
not): a commitment, stored as ``reserved`` with ``term_months=1`` at its effective hourly price
(monthly / 730 h), ``extra["monthly_price"]`` keeping the printed figure. Instances without a GPU
in ``blobs.technical`` and Windows flavors (``win-``: a licence in the price) are not GPU
rentals and are left out. Each offer is repeated per region of its flavor: the hourly addon often
lists no region while its monthly twin does, so a flavor's regions are the union over its addons
(none anywhere: one offer with region "" and ``extra["regions_unstated"]``).

No ``project`` plan, no ``instance`` family, no addon for its plan codes, no currency, or no GPU
flavor at all -> ``ParseError("ovhcloud: ...")``. One flavor's price that is missing or no
number quarantines that offer only.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    as_list,
    dig,
    field_path,
    number,
    read_price,
    require,
    unreadable,
)
from tracker.kinds import HOURS_PER_MONTH

API = "https://eu.api.ovh.com/v1/order/catalog/public/cloud"
SUBSIDIARY = "FR"
#: The catalogue's prices are integers in 10^-8 of the currency unit.
PRICE_SCALE = 100_000_000


def _regions(addon: dict[str, Any]) -> list[str]:
    """The region values of an addon's ``configurations`` (may be empty)."""
    out: list[str] = []
    for conf in as_list(addon.get("configurations")):
        if isinstance(conf, dict) and conf.get("name") == "region":
            out.extend(v for v in as_list(conf.get("values")) if isinstance(v, str) and v.strip())
    return out


class OvhcloudScraper(Scraper):
    name: ClassVar[str] = "ovhcloud"
    segment: ClassVar[str] = "neocloud"
    display_name: ClassVar[str] = "OVHcloud (Public Cloud)"
    homepage: ClassVar[str] = "https://www.ovhcloud.com/en/public-cloud/prices/"
    endpoint: ClassVar[str] = f"GET {API}?ovhSubsidiary={SUBSIDIARY}"
    source_kind: ClassVar[str] = "api"
    fixture_kind: ClassVar[str] = "reference"
    checked_by: ClassVar[str] = "reference: the public order catalogue as SpareCores/sc-crawler reads it (structure only, own values)"
    kinds: ClassVar[tuple[str, ...]] = ("on_demand", "reserved")
    caveats: ClassVar[str] = (
        "public order catalogue of the FR subsidiary: EUR excluding VAT (currency read from the payload), "
        "converted only with a configured currency_rates.EUR; monthly plans stored as reserved, 1 month, "
        "at monthly/730; one offer per region the catalogue lists for the flavor"
    )

    async def fetch(self, http: Http) -> Any:
        return await http.get_json(API, params={"ovhSubsidiary": SUBSIDIARY}, headers={"Accept": "application/json"})

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        currency = require(raw, "locale", "currencyCode", provider=self.name, kind=str).strip().upper()
        if len(currency) != 3 or not currency.isalpha():
            raise ParseError(f"{self.name}: locale.currencyCode {currency!r} is no currency code")
        plans = require(raw, "plans", provider=self.name, kind=list)
        project = next((p for p in plans if isinstance(p, dict) and p.get("planCode") == "project"), None)
        if project is None:
            raise ParseError(f"{self.name}: plans has no entry whose planCode is 'project'")
        family = next(
            (f for f in as_list(project.get("addonFamilies")) if isinstance(f, dict) and f.get("name") == "instance"), None
        )
        codes = [c for c in as_list(dig(family, "addons")) if isinstance(c, str)]
        if not codes:
            raise ParseError(f"{self.name}: the project plan's addonFamilies has no 'instance' entry with addons")
        addons = {a.get("planCode"): (i, a) for i, a in enumerate(require(raw, "addons", provider=self.name, kind=list))
                  if isinstance(a, dict)}
        found = [addons[c] for c in codes if c in addons]
        if not found:
            raise ParseError(f"{self.name}: addons has no entry for any of the {len(codes)} instance planCode values")

        gpu_addons = [(i, a) for i, a in found if self._is_gpu_rental(a)]
        if not gpu_addons:
            raise ParseError(f"{self.name}: no instance entry of addons has a GPU in blobs.technical.gpu")
        regions_of: dict[str, set[str]] = {}
        for _, addon in gpu_addons:
            regions_of.setdefault(str(addon.get("invoiceName") or addon.get("planCode")), set()).update(_regions(addon))

        offers: list[ScrapedOffer] = []
        for index, addon in gpu_addons:
            offers.extend(self._addon_offers(addon, index, currency, regions_of))
        if not offers:
            raise ParseError(f"{self.name}: no GPU entry of addons has an hourly or monthly price in pricings")
        return offers

    @staticmethod
    def _is_gpu_rental(addon: dict[str, Any]) -> bool:
        flavor = str(addon.get("invoiceName") or addon.get("planCode") or "")
        gpu = dig(addon, "blobs", "technical", "gpu")
        return isinstance(gpu, dict) and bool(gpu) and not flavor.lower().startswith("win-")

    def _addon_offers(
        self, addon: dict[str, Any], index: int, currency: str, regions_of: dict[str, set[str]]
    ) -> list[ScrapedOffer]:
        at = field_path("addons", index)
        code = require(addon, "planCode", provider=self.name, kind=str, at=at)
        flavor = str(addon.get("invoiceName") or code)
        gpu = dig(addon, "blobs", "technical", "gpu")
        model = gpu.get("model")
        if not isinstance(model, str) or not model.strip():
            raise ParseError(f"{self.name}: {at}.blobs.technical.gpu has no 'model'")
        count_value = gpu.get("number")
        count = number(count_value)
        bad_count: dict[str, str] = {}
        if count is None or count <= 0:
            bad_count = unreadable("GPU count", f"{at}.blobs.technical.gpu.number", count_value, "not a positive count")
            count = 1
        count = int(count) if float(count).is_integer() else count
        memory = number(dig(gpu, "memory", "size"))
        cpu = dig(addon, "blobs", "technical", "cpu") or {}
        vcpus = number(cpu.get("threads")) if isinstance(cpu, dict) else None
        if vcpus is None and isinstance(cpu, dict):
            vcpus = number(cpu.get("cores"))
        ram = number(dig(addon, "blobs", "technical", "memory", "size"))
        tags = [t for t in as_list(dig(addon, "blobs", "tags")) if isinstance(t, str)]

        priced = self._pricings(addon, at)
        if not priced:
            # a GPU flavor without an hourly or monthly price: the field itself is gone
            why = unreadable("price", f"{at}.pricings", addon.get("pricings"), "no hourly or monthly price")
            priced = [("on_demand", None, why, 0, None)]
        regions = sorted(regions_of.get(flavor, set())) or [""]
        offers = []
        for kind, price, bad, term, printed in priced:
            extra: dict[str, Any] = {"plan_code": code, "flavor": flavor, "tags": tags, **bad_count, **bad}
            if regions == [""]:
                extra["regions_unstated"] = True
            if kind == "reserved":
                extra["commitment"] = "monthly plan"
                extra["monthly_price"] = printed
            for region in regions:
                offers.append(
                    self.offer(
                        sku=code,
                        gpu_raw=model.strip(),
                        gpu_count=count,
                        gpu_memory_gb=memory,
                        vcpus=vcpus,
                        ram_gb=ram,
                        price_per_hour=price,
                        kind=kind,
                        term_months=term,
                        region=region,
                        currency=currency,
                        extra=dict(extra),
                    )
                )
        return offers

    def _pricings(self, addon: dict[str, Any], at: str) -> list[tuple[str, float | None, dict[str, str], int, float | None]]:
        """(kind, hourly price, quarantine reason, term months, printed price) of the addon's hourly
        and monthly prices."""
        out: list[tuple[str, float | None, dict[str, str], int, float | None]] = []
        for j, pricing in enumerate(as_list(addon.get("pricings"))):
            if not isinstance(pricing, dict):
                continue
            capacities = [c for c in as_list(pricing.get("capacities")) if isinstance(c, str)]
            unit = pricing.get("intervalUnit")
            if unit == "hour" and "consumption" in capacities:
                kind, term, per_hour = "on_demand", 0, 1.0
            elif unit == "month" and "renew" in capacities:
                kind, term, per_hour = "reserved", 1, 1 / HOURS_PER_MONTH
            else:
                continue  # installation fees, other capacities
            if any(k == kind for k, *_ in out):
                continue  # tiers after the first (the catalogue lists the base tier first)
            value, bad = read_price(pricing, "price", at=field_path(at, "pricings", j))
            printed = None if value is None else value / PRICE_SCALE
            out.append((kind, None if printed is None else round(printed * per_hour, 6), bad, term, printed))
        return out
