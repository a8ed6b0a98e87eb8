"""thatkavish/OpenComputePrices unified CSVs (``data/<source>.csv``, and the release assets
published since 2026-03-24, ``_master.csv`` and ``_expired.csv`` included): one row per offer
per snapshot in one schema for 40+ sources.

Columns read: ``snapshot_ts, source, provider, instance_type, gpu_name, gpu_variant,
gpu_memory_gb, gpu_count, vcpus, ram_gb, region, zone, country, pricing_type,
commitment_period, price_per_hour, price_per_gpu_hour, currency, price_unit, available,
available_count, raw_extra`` (the others are kept out; ``raw_extra`` is provider JSON).

How rows become offers:

* **Snapshots.** Each (source, ``snapshot_ts``) is one collection of that source; a source is
  one series (``ocp:<source>``): an offer of it missing from a later snapshot is no longer
  listed. The collector runs once a day (a cron at 06:00 UTC, plus re-runs by hand): a source
  keeps **one snapshot per UTC day, the newest** -- a re-run replaces that day's rows, as the
  archive's own later copies do (a file's first copy can hold a run its next copy replaced). So
  the files are append-only in effect: a copy and every older copy of it import to the history
  of the newest copy alone, in one command or several, in any order. Consecutive days are
  consecutive collections (up to 48 hours apart); a missing day is a gap.
* **Providers.** ``provider`` goes through the alias table (``google_cloud`` -> ``gcp``,
  ``lambda_labs`` -> ``lambda``; ``_sponsored`` listings are the provider's own); a name with
  no scraper is an external provider. Rows of an **aggregator** source (``getdeploying``,
  ``shadeform``, ``primeintellect``: a price a user finds or pays through it) are stored under
  the aggregator, sku ``<provider>:<instance_type>``, with the cloud they name in
  ``extra["via"]`` (``tracker.analysis.aggregators`` counts it once in market figures).
* **GPUs.** Through our catalog, never that project's own names alone (its ``gpu_name`` folds
  ``RTX 4070 Ti Super`` into ``RTX 4070``): aggregator rows by the name they print
  (``cheapest_<name>``, ``gpu_detail``) first; every row by ``gpu_name`` plus ``gpu_variant``,
  then ``gpu_name``, then ``instance_type``, each with the memory per GPU (``gpu_memory_gb``, or
  it divided by the count when it is the instance's total). A **slice** (a count below one, a
  MIG profile, Vultr ``vcg-*`` plans, or memory per GPU below the whole card's) is never stored
  as a whole GPU: it keeps its raw name with ``slice`` and is reported unmapped.
* **Not GPU rentals** are kept out (counted as ``not_gpu``): ``pricing_type`` inference
  (per-token prices), software licences priced per GPU-hour (NVIDIA AI Enterprise, licensing
  fees), on-premises parts (Oracle Compute Cloud@Customer, Resource Commit), Trainium and
  Inferentia instances.
* **Prices.** ``price_per_hour`` is for ``gpu_count`` GPUs; a count of 0 or none beside a
  per-GPU-hour price is a per-GPU price (count 1, ``extra["per_gpu_price"]``). Kinds:
  on_demand; spot, preemptible, interruptible -> spot; reserved, committed -> reserved with the
  term of ``commitment_period`` or the aggregator's billing text (``6-month``, ``1yr``), else
  ``term_unstated``; a ``price_unit`` of month is a monthly plan: reserved, one month unless
  stated, its price the effective hourly rate. The price stays in its ``currency``.
  ``available`` and ``available_count`` are kept (``extra``); ``available`` is the offer's
  availability (from the count where the flag is blank), and on a one-GPU row the count is its GPUs
  free (``available_count``: the newest snapshot's is the offer's count now). A row's identity is its
  ``instance_type`` and ``gpu_variant`` (an aggregator's: the cloud named and its instance
  type), its region, and a marketplace host's ``raw_extra.location_id`` (TensorDock lists two
  Dallas locations); Akash's price tiers of one GPU are one offer at its cheapest tier; rows of
  one snapshot still sharing an identity (Crusoe prints two A100 PCIe 80GB prices) become
  ``#1``, ``#2`` by price.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from scrapers._aws_common import is_not_gpu
from scrapers.base import ScrapedOffer, positive
from scrapers.oci import NOT_PUBLIC
from tracker.errors import TrackerError
from tracker.pipeline.imports import OPENCOMPUTEPRICES, base
from tracker.pipeline.imports.aliases import provider_name

NAME = OPENCOMPUTEPRICES
DESCRIPTION = "thatkavish/OpenComputePrices unified CSVs (data/<source>.csv, release assets)"
CADENCE = timedelta(days=1)
#: Newest snapshots of two consecutive days can be up to two days apart.
MAX_GAP = timedelta(hours=48)
SOURCE = "thatkavish/OpenComputePrices"
SERIES_PREFIX = "ocp:"
REQUIRED = ["snapshot_ts", "source", "provider", "instance_type", "gpu_name", "gpu_count", "pricing_type",
            "price_per_hour", "price_per_gpu_hour"]
#: Sources whose rows are prices found or paid through them, naming another cloud.
AGGREGATORS = frozenset({"getdeploying", "shadeform", "primeintellect"})
#: That project's provider spellings that are not ours (after ``_`` becomes a space).
ALIASES = {"lambda": "lambda", "google cloud": "gcp", "oracle cloud": "oci", "ovh": "ovhcloud",
           "packet·ai": "packetai", "packet.ai": "packetai", "hot aisle": "hotaisle", "thunder compute": "thundercompute",
           "voltage park": "voltagepark", "lightning ai": "lightningai", "massed compute": "massedcompute",
           "prime intellect": "primeintellect", "gmi cloud": "gmicloud", "e2e networks": "e2e",
           "gpu.ai": "gpuai", "database mart": "databasemart"}
KINDS = {"on_demand": "on_demand", "ondemand": "on_demand", "on-demand": "on_demand", "spot": "spot",
         "preemptible": "spot", "interruptible": "spot", "reserved": "reserved", "committed": "reserved"}
#: Rows that are not a GPU rental, by words in their names or ``raw_extra``.
NOT_RENTAL = re.compile(r"ai enterprise|licen[cs]e|licensing fee|" + "|".join(re.escape(w) for w in NOT_PUBLIC), re.I)
#: ``raw_extra`` key naming a marketplace's host location: part of the offer's identity (two
#: TensorDock locations can share one city name).
LOCATION_KEY = "location_id"
#: ``extra`` key of a marketplace summary's statistic (Akash: ``raw_extra.price_tier``).
TIER_KEY = "price_tier"
_INSTANCE = re.compile(r"\(([^()\s]+)\)\s*$")
_TERM = re.compile(r"(\d+)\s*-?\s*(yr|year|y|mo|month|m)s?\b", re.I)


def sniff(path: Path, head: str) -> bool:
    first = head.splitlines()[0] if head else ""
    return "snapshot_ts" in first and "price_per_gpu_hour" in first and "raw_extra" in first


def provider_of(raw: str) -> str:
    """Our name for that project's provider name (see the module docstring)."""
    key = " ".join(raw.strip().lower().replace("_", " ").split())
    key = key.removesuffix(" sponsored")
    if key in ALIASES:
        return ALIASES[key]
    mapped = provider_name(key)
    if mapped != key:
        return mapped
    squashed = key.replace(" ", "")
    return squashed if provider_name(squashed) == squashed else provider_name(squashed)


def _extra(row: Mapping[str, str]) -> dict[str, Any]:
    try:
        doc = json.loads(row.get("raw_extra") or "{}")
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _term_months(text: str) -> int | None:
    m = _TERM.search(text)
    if m is None:
        return None
    n, unit = int(m.group(1)), m.group(2).lower()
    return n * 12 if unit.startswith("y") else n


def _names(row: Mapping[str, str], extra: Mapping[str, Any], aggregator: bool) -> list[str]:
    gpu, variant = (row.get("gpu_name") or "").strip(), (row.get("gpu_variant") or "").strip()
    itype = (row.get("instance_type") or "").strip()
    names: list[str] = []
    if aggregator:
        names += [itype.removeprefix("cheapest_"), str(extra.get("gpu_detail") or "")]
        names += _INSTANCE.findall(itype)  # "1x V100 16GB (p3.2xlarge)": the cloud's instance type
    if variant and variant.lower() not in gpu.lower():
        names.append(f"{gpu} {variant}")
    names += [gpu, itype]
    return [n for n in dict.fromkeys(names) if n]


def resolve(row: Mapping[str, str], provider: str, count: float, extra: Mapping[str, Any],
            aggregator: bool) -> tuple[str | None, str, float | None]:
    """(canonical GPU or None, raw name, memory per GPU) for a row (``base.catalog_gpu``: a slice
    is never a whole GPU). ``provider``: the cloud whose instance types the names may be (an
    aggregator row's ``via``)."""
    return base.catalog_gpu(_names(row, extra, aggregator), provider=provider, count=count,
                       memory=positive(row.get("gpu_memory_gb"), strings=True))


def not_a_rental(row: Mapping[str, str], extra: Mapping[str, Any]) -> str | None:
    """Why a row is not a GPU rental (then it is kept out), or None."""
    if (row.get("pricing_type") or "").strip().lower() == "inference":
        return "inference price"
    text = " ".join([row.get("instance_type") or "", row.get("instance_family") or "", row.get("gpu_name") or "",
                     row.get("pre_installed_sw") or "", row.get("tenancy") or "", json.dumps(extra)])
    if NOT_RENTAL.search(text):
        return "software licence or on-premises part"
    gpu = (row.get("gpu_name") or "").lower()
    if "trainium" in gpu or "inferentia" in gpu or is_not_gpu((row.get("instance_type") or "").strip()):
        return "not a GPU"
    return None


def _kind(row: Mapping[str, str], extra: Mapping[str, Any]) -> tuple[str, int, dict[str, Any]]:
    pricing = (row.get("pricing_type") or "").strip().lower()
    kind = KINDS.get(pricing)
    if kind is None:
        raise ValueError(f"pricing_type {pricing!r} is not one of {', '.join(sorted(KINDS))} or inference")
    unit = (row.get("price_unit") or "hour").strip().lower()
    stated = (row.get("commitment_period") or "").strip()
    if unit == "month":
        kind = "reserved"
    if kind != "reserved":
        return kind, 0, {}
    term = _term_months(stated) or _term_months(str(extra.get("billing") or ""))
    if term is None and unit == "month":
        term = 1
    out: dict[str, Any] = {"commitment": stated or str(extra.get("billing") or "")} if (stated or extra.get("billing")) else {}
    if unit == "month":
        out["monthly_plan"] = True
    if term is None:
        out["term_unstated"] = True
        return kind, 0, out
    return kind, term, out


def _offer(row: Mapping[str, str], source: str) -> ScrapedOffer:
    extra = _extra(row)
    named = (row.get("provider") or "").strip() or source
    aggregator = source in AGGREGATORS
    provider = source if aggregator else provider_of(named)
    itype = (row.get("instance_type") or "").strip()
    if not itype:
        raise ValueError("instance_type is empty")
    count = base.number(row, "gpu_count", required=False) or 0.0
    per_gpu = base.number(row, "price_per_gpu_hour", required=False)
    price = base.number(row, "price_per_hour", required=False)
    notes: dict[str, Any] = {}
    if count <= 0:
        if per_gpu is None:
            raise ValueError("gpu_count is 0 and there is no price_per_gpu_hour")
        count, price = 1.0, per_gpu
        notes["per_gpu_price"] = True
    elif price is None and per_gpu is not None:
        price = per_gpu * count
    kind, term, kind_notes = _kind(row, extra)
    via = provider_of(named) if aggregator else None
    gpu, raw, memory = resolve(row, via or provider, count, extra, aggregator)
    if not raw:
        raise ValueError("gpu_name and instance_type name no GPU")
    available = {"true": True, "false": False}.get((row.get("available") or "").strip().lower())
    avail_count = base.number(row, "available_count", required=False)
    free = None
    if avail_count is not None:
        notes["available_count"] = int(avail_count) if avail_count.is_integer() else avail_count
        if available is None and avail_count >= 0:
            available = avail_count > 0  # the count says it where the flag is blank
        if count == 1 and avail_count.is_integer() and avail_count >= 0 and available is (avail_count > 0):
            free = int(avail_count)  # a per-GPU row: its count is GPUs free
    sku = f"{via}:{itype}" if via and not itype.startswith("cheapest_") else itype
    tier = extra.get(TIER_KEY)
    if isinstance(tier, str) and sku.endswith(f"_{tier}"):
        sku, notes[TIER_KEY] = sku.removesuffix(f"_{tier}"), tier
    variant = (row.get("gpu_variant") or "").strip()
    if variant and not aggregator:
        sku = f"{sku}/{variant}"
    if isinstance(extra.get(LOCATION_KEY), str) and extra[LOCATION_KEY].strip():
        sku = f"{sku}@{extra[LOCATION_KEY].strip()}"  # one host location of a marketplace (TensorDock)
    currency = (row.get("currency") or "USD").strip().upper() or "USD"
    return ScrapedOffer(
        provider=provider, sku=sku, gpu_raw=raw, gpu_count=count, price_per_hour=price, kind=kind, term_months=term,
        region=(row.get("region") or "").strip() or (row.get("zone") or "").strip(),
        country=(row.get("country") or "").strip() or None, gpu_memory_gb=memory,
        vcpus=positive(row.get("vcpus"), strings=True), ram_gb=positive(row.get("ram_gb"), strings=True),
        currency=currency, available=available, available_count=free, gpu=gpu,
        extra={"source": SOURCE, "source_name": source, "source_provider": named, **({"via": via} if via else {}),
               **kind_notes, **notes, **({"raw_extra": extra} if extra else {})},
    )


def _numbered(offers: list[ScrapedOffer]) -> list[ScrapedOffer]:
    """Offers of one snapshot sharing an identity: a marketplace summary's price tiers (Akash's
    min, max, avg, weightedAverage of one GPU) are one offer at the cheapest tier, the others in
    ``extra["price_tiers"]``; other rows are numbered by price (``#1`` the cheapest)."""
    groups: dict[tuple[str, str, str, int], list[ScrapedOffer]] = defaultdict(list)
    for o in offers:
        groups[(o.sku, o.region, o.kind, o.term_months)].append(o)
    out: list[ScrapedOffer] = []
    for group in groups.values():
        group.sort(key=lambda o: (o.price_per_hour is None, o.price_per_hour or 0.0, o.gpu_raw))
        tiers = {o.extra.get(TIER_KEY): o.price_per_hour for o in group}
        if None not in tiers:
            out.append(replace(group[0], extra={**group[0].extra, "price_tiers": tiers}))
        elif len(group) == 1:
            out += group
        else:
            out += [replace(o, sku=f"{o.sku}#{i}") for i, o in enumerate(group, start=1)]
    return out


def read(path: Path, result: base.ImportResult, progress: base.Progress | None = None) -> Iterator[base.Snapshot]:
    """Snapshots of every source in ``path``, about ``BATCH_ROWS`` rows at a time (the rows of
    one snapshot come together in the archive's files); the newest-per-day rule is applied by
    the store (``store_snapshots(one_per_day=True)``), across files and commands."""
    by_snapshot: dict[tuple[str, datetime], list[tuple[int, ScrapedOffer]]] = defaultdict(list)
    held = 0
    with path.open(newline="", encoding="utf-8-sig") as fh:
        for line, row in base.csv_records(fh, path.name, "an OpenComputePrices row", REQUIRED, "OpenComputePrices", progress):
            result.rows += 1
            try:
                at = base.when(row, "snapshot_ts")
                base.check_future(at, "snapshot_ts")
                source = (row.get("source") or "").strip().lower()
                if not source:
                    raise ValueError("source is empty")
                key = (source, at)
                if not_a_rental(row, _extra(row)):
                    result.not_gpu += 1
                    by_snapshot.setdefault(key, [])  # a collection that saw only rows kept out still happened
                    continue
                offer = _offer(row, source)
                # only rows read make a snapshot: one whose every row is bad is no collection, and
                # never a delisting of every offer of its source
                if held >= base.BATCH_ROWS and key not in by_snapshot:
                    yield from _snapshots(by_snapshot, path.name)
                    by_snapshot.clear()
                    held = 0
                by_snapshot.setdefault(key, []).append((line, offer))
                held += 1
            except (ValueError, TrackerError) as exc:
                result.bad(base.BadRow(line, str(exc).splitlines()[0], path.name))
    yield from _snapshots(by_snapshot, path.name)


def _snapshots(by_snapshot: Mapping[tuple[str, datetime], list[tuple[int, ScrapedOffer]]], file: str) -> Iterator[base.Snapshot]:
    for (source, at), rows in sorted(by_snapshot.items()):
        first = min((line for line, _o in rows), default=0)
        yield from base.collection(f"{SERIES_PREFIX}{source}", at, _numbered([o for _line, o in rows]), first, file)
