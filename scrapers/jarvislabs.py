"""JarvisLabs GPU prices: the public pricing page without a key, the ``server_meta`` API with one.

One source per run, never both (the two name GPUs differently, so one offer is never counted twice):

* **No key (the default)**: ``GET https://jarvislabs.ai/pricing`` once, after checking robots.txt.
  Why a page: the API answers only with a Bearer token, while the pricing page serves its prices
  in plain HTML tables to anyone; thatkavish/OpenComputePrices (MIT, its March 2026 collector,
  "No authentication required") reads them there. Read: every table headed **GPU**, **VRAM** and
  **$/hour** (also read when present: Generation, RAM, vCPUs). Each row is an ``on_demand``
  offer of one GPU (the page prices per GPU-hour, as the API does): ``sku`` the GPU slug with its
  memory, ``gpu_raw`` the GPU as printed, no region (the page names none), generation in
  ``extra``. A row repeated at the same price counts once; at another price the page is
  ambiguous (``ParseError``). No such table -> ``ParseError("jarvislabs: layout changed: ...")``;
  a price that is no number quarantines that row. No capture of the page is public, so the
  bundled fixture is a REFERENCE: our own values in the columns that collector reads.
* **With ``JARVISLABS_TOKEN`` set** (the richer path: regions, spot, free GPUs): one ``GET
  https://backendn.jarvislabs.net/misc/server_meta`` with ``Authorization: Bearer
  $JARVISLABS_TOKEN``. Why one host: the answer of any one JarvisLabs API host lists the rows of
  *every* region (each row names its ``region``), which is how 2026 clients read it: dstack's
  gpuhunt (2026-06) calls only ``backendn`` and takes every region from that one answer (a later
  gpuhunt defaults to ``backendprod`` and likewise reads all regions from one call; the regional
  hosts are only needed to *create* machines). Asking all four regional hosts, as this scraper
  once did, made the run fail whenever any one of them was down. A row repeated in the answer
  counts once (the first wins). Replay reads the page (its recording is the page).

API keys relied on: ``server_meta[]`` rows with ``gpu_type`` ("A100-80GB"), ``region``,
``price_per_hour`` and ``spot_price`` (USD **per GPU-hour**; null = no such offer), ``vram`` (GB per
GPU, a string), ``cpus_per_gpu``, ``ram_per_gpu``, ``num_gpus`` (max GPUs per machine, a string),
``num_free_devices`` / ``effective_num_free_devices`` / ``spot_num_free_devices`` and
``workload_type`` ("vm", "container" or null for older VM rows). ``cpu_meta`` (CPU-only machines)
is ignored.

API offers: one per row and kind, priced for a single-GPU machine (``gpu_count=1``, so
``price_per_hour`` is the per-GPU price; larger machines scale linearly up to ``num_gpus``, kept in
``extra["max_gpus"]``). ``sku`` is the GPU type, plus ``/container`` or ``/vm`` when the row names its
workload type. ``available`` is whether free devices of that kind are reported, ``available_count`` how many. Spot: gpuhunt
(2026-06) no longer offers JarvisLabs spot machines; a row whose ``spot_price`` is null gives no
spot offer, and one that still carries a price gives it (never invented from the on-demand price).
"""

from __future__ import annotations

from typing import Any

from scrapers.base import (
    Http,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    free_count,
    number,
    read_price,
    require,
)

PRICING_URL = "https://jarvislabs.ai/pricing"
HOST = "https://backendn.jarvislabs.net"
SERVER_META_PATH = "/misc/server_meta"
SERVER_META_URL = HOST + SERVER_META_PATH


def _number(value: Any) -> float | None:
    """Numbers and numeric strings ("24", "8") -> float; anything else -> None."""
    return number(value, strings=True)


class JarvislabsScraper(Scraper):
    name = "jarvislabs"
    segment = "neocloud"
    display_name = "JarvisLabs"
    homepage = "https://jarvislabs.ai"
    endpoint = f"GET {PRICING_URL} (HTML tables, no key); with a key: GET {SERVER_META_URL}"
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = ("reference: the pricing-page columns the MIT thatkavish/OpenComputePrices collector reads "
                  "(structure only, own values); with a key, public client dstackai/gpuhunt")
    optional_credentials = ("JARVISLABS_TOKEN",)
    per_gpu_limit_field = "max_gpus"
    kinds = ("on_demand", "spot")
    caveats = ("price is per GPU-hour for a 1-GPU machine (scales linearly to max_gpus); storage extra; "
               "without a key from the pricing page (on demand, no region), with one from the API (regions, spot)")

    def keyed(self) -> bool:
        """Whether this run reads the API: the token set, and not a replay (whose recording is the page)."""
        return not self.replay and bool(self.env.get("JARVISLABS_TOKEN"))

    async def fetch(self, http: Http) -> Any:
        if not self.keyed():
            return await http.get_page(PRICING_URL)
        headers = {"Authorization": f"Bearer {self.credential('JARVISLABS_TOKEN')}"}
        return await http.get_json(SERVER_META_URL, headers=headers)

    @staticmethod
    def _price(row: dict[str, Any], key: str, where: str) -> tuple[float | None, dict[str, str]]:
        """(price, extra): a spot price of 0 means no spot offer; an on-demand price of 0 stays 0,
        so validation quarantines it with its reason (a listed GPU at no price is no offer to
        drop unexplained); a value that is no number is kept for quarantine."""
        price, bad = read_price(row.get(key), at=field_path(where, key))
        return (None if price == 0 and key != "price_per_hour" else price), bad

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if isinstance(raw, (str, bytes)):
            return self._parse_page(raw)
        return self._parse_api(raw)

    def _parse_page(self, raw: str | bytes) -> list[ScrapedOffer]:
        from scrapers.html import (cell_field, column_index, gpu_table_rows, hourly_price, is_blank, parse_gb, parse_number,
                                   printed_once, slug, text_of)

        offers: list[ScrapedOffer] = []
        seen: dict[str, float | None] = {}
        for row in gpu_table_rows(self.name, raw, "GPU", "VRAM", "$/hour"):
            text = text_of(row.cells[row.col["$/hour"]])
            if is_blank(text):
                continue  # not offered
            price, currency, extra = hourly_price(text, cell_field("$/hour", row.gpu))
            sku = slug(f"{row.gpu} {row.memory_gb:g}gb" if row.memory_gb else row.gpu)
            if not printed_once(seen, sku, price, self.name, repr(row.gpu)):
                continue
            spec = {}
            for label in ("Generation", "RAM", "vCPUs"):
                i = column_index(row.table, label)
                spec[label] = text_of(row.cells[i]) if i is not None and i < len(row.cells) else ""
            if spec["Generation"]:
                extra["generation"] = spec["Generation"]
            offers.append(self.offer(
                sku=sku, gpu_raw=row.gpu, gpu_count=1, gpu_memory_gb=row.memory_gb, vcpus=parse_number(spec["vCPUs"]),
                ram_gb=parse_gb(spec["RAM"]), kind="on_demand",
                price_per_hour=price, currency=currency, extra={"per_gpu": True, **extra}))
        return offers

    def _parse_api(self, raw: Any) -> list[ScrapedOffer]:
        rows = require(raw, "server_meta", provider=self.name, kind=list)
        if not rows:
            raise ParseError(f"{self.name}: server_meta is empty")
        offers: dict[tuple[str, str, str], ScrapedOffer] = {}
        for i, row in enumerate(rows):
            at = field_path("server_meta", i)
            gpu_type = require(row, "gpu_type", provider=self.name, kind=str, at=at)
            region = require(row, "region", provider=self.name, kind=str, at=at)
            workload = row.get("workload_type")
            sku = f"{gpu_type}/{workload}" if workload else gpu_type
            free = _number(row.get("effective_num_free_devices"))
            if free is None:
                free = _number(row.get("num_free_devices"))
            spot_free = _number(row.get("spot_num_free_devices"))
            extra = {
                k: v
                for k, v in (
                    ("max_gpus", _number(row.get("num_gpus"))),
                    ("workload_type", workload),
                    ("free_gpus", free),
                    ("spot_free_gpus", spot_free),
                )
                if v is not None
            }
            for kind, key, available in (
                ("on_demand", "price_per_hour", free),
                ("spot", "spot_price", spot_free),
            ):
                price, bad_price = self._price(row, key, at)
                if (price is None and not bad_price) or (sku, region, kind) in offers:
                    continue
                offers[(sku, region, kind)] = self.offer(
                    sku=sku,
                    gpu_raw=gpu_type,
                    gpu_count=1,
                    gpu_memory_gb=_number(row.get("vram")),
                    vcpus=_number(row.get("cpus_per_gpu")),
                    ram_gb=_number(row.get("ram_per_gpu")),
                    kind=kind,
                    price_per_hour=price,
                    region=region,
                    country="IN" if region.startswith("india-") else None,
                    available=None if available is None else available > 0,
                    available_count=free_count(available),
                    extra={**extra, **bad_price},
                )
        return list(offers.values())
